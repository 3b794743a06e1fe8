/**
 * The published packages as a user gets them (tarballs installed into a fresh app outside the
 * workspace by globalSetup): the app's bundle, the engine from plain Node, and the app in
 * two Chromium tabs that share state through BroadcastChannel and recover from IndexedDB.
 */
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect, type Page, test } from '@playwright/test'

const appDir = (): string => required('CONSUMER_APP_DIR')
const appUrl = (): string => required('CONSUMER_APP_URL')
/** Printed by Yjs's module body once per copy of Yjs in a bundle (its guard against two copies). */
const YJS_COPY_MARKER = 'Yjs was already imported'

function required(name: string): string {
  const value = process.env[name]
  if (value === undefined || value === '') throw new Error(`${name} is not set: run through e2e/consumer/playwright.config.ts (its globalSetup makes the app)`)
  return value
}

function node(args: readonly string[]): { stdout: string; stderr: string; status: number | null; ms: number } {
  const started = performance.now()
  const run = spawnSync(process.execPath, args, { cwd: appDir(), encoding: 'utf8' })
  return { stdout: run.stdout, stderr: run.stderr, status: run.status, ms: performance.now() - started }
}

test('the built app holds exactly one copy of Yjs, though the app and @tidemark/yjs both import it', () => {
  const assets = join(appDir(), 'dist', 'assets')
  const scripts = readdirSync(assets).filter((file) => file.endsWith('.js'))
  expect(scripts.length).toBeGreaterThan(0)
  const code = scripts.map((file) => readFileSync(join(assets, file), 'utf8')).join('\n')
  expect(readFileSync(join(appDir(), 'src', 'main.tsx'), 'utf8')).toContain("import * as Y from 'yjs'")
  expect(code.split(YJS_COPY_MARKER).length - 1).toBe(1)
  console.log(`[consumer] bundle: ${scripts.length} script(s), ${(Buffer.byteLength(code) / 1000).toFixed(1)} kB, 1 copy of Yjs`)
})

test('plain Node imports @tidemark/engine from the tarball and runs a tumbling window', () => {
  const esm = node(['node-check.mjs'])
  expect(esm.stderr).toBe('')
  expect(esm.status).toBe(0)
  console.log(`[consumer] node node-check.mjs (${esm.ms.toFixed(0)} ms):\n${esm.stdout.trimEnd()}`)
  expect(esm.stdout).toBe(
    [
      'window tumbling:1000 [0, 1000): count=2 sum=42 mean=21 status=on_time basis=proven',
      'window tumbling:1000 [1000, 2000): count=1 sum=30 mean=30 status=provisional basis=unknown',
      'accepted=3 duplicates=1',
      '',
    ].join('\n'),
  )
  // CommonJS callers: the "default" export condition (not "import") lets Node >= 20.19 require() the
  // ES module; older Node refuses any require of an ES module, whatever the conditions.
  const cjs = node(['--disable-warning=ExperimentalWarning', 'node-require.cjs'])
  console.log(`[consumer] node node-require.cjs (${cjs.ms.toFixed(0)} ms): ${(cjs.stdout + cjs.stderr).trimEnd().split('\n')[0]}`)
  if ((process.features as { require_module?: boolean }).require_module === true) {
    expect(cjs.stderr).toBe('')
    expect(cjs.stdout).toBe('require: 1 window, count=1\n')
  } else {
    expect(cjs.stderr).toContain('ERR_REQUIRE_ESM')
  }
})

test('two tabs converge through BroadcastChannel, a reload recovers from IndexedDB, no console error', async ({ context }) => {
  const started = performance.now()
  const errors: string[] = []
  const open = async (name: string): Promise<Page> => {
    const page = await context.newPage()
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') errors.push(`${name} console.${message.type()}: ${message.text()}`)
    })
    page.on('pageerror', (error) => errors.push(`${name} page error: ${error.message}`))
    await page.goto(appUrl())
    await expect(page.getByTestId('total')).toHaveText('0')
    return page
  }
  const add = async (page: Page, readings: number): Promise<void> => {
    for (let i = 0; i < readings; i++) await page.getByRole('button', { name: 'Add reading' }).click()
  }

  const a = await open('tab A')
  const b = await open('tab B')
  const sourceA = await a.getByTestId('source').textContent()
  expect(sourceA).toMatch(/^tab-/)
  expect(await b.getByTestId('source').textContent()).not.toBe(sourceA)

  await add(a, 3)
  await add(b, 2)
  await expect(a.getByTestId('durable')).toHaveText('3')
  await expect(b.getByTestId('durable')).toHaveText('2')
  await expect(a.getByTestId('total')).toHaveText('5')
  await expect(b.getByTestId('total')).toHaveText('5')
  const converged = performance.now()

  // Reload: the tab keeps its source (Web Lock + sessionStorage) and IndexedDB gives back its three readings.
  await a.reload()
  await expect(a.getByTestId('source')).toHaveText(sourceA as string)
  await expect(a.getByTestId('recovered')).toHaveText('3')
  await expect(a.getByTestId('total')).toHaveText('5')
  // The next reading continues the sequence (a restarted one would be a duplicate and not count).
  await add(a, 1)
  await expect(a.getByTestId('durable')).toHaveText('4')
  await expect(a.getByTestId('total')).toHaveText('6')
  await expect(b.getByTestId('total')).toHaveText('6')

  console.log(
    `[consumer] browser: converged in ${((converged - started) / 1000).toFixed(1)} s, reload and recovery in ${((performance.now() - converged) / 1000).toFixed(1)} s`,
  )
  expect(errors).toEqual([])
})
