/**
 * The engine core imports no React and needs no DOM (packages/engine/README.md: it runs in
 * browsers, workers and Node; core tests run with React mocked away). Any import of React by the engine
 * throws at module load; the run happens in Node with no window or document.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it, vi } from 'vitest'

vi.mock('react', () => {
  throw new Error('engine must not import react')
})
vi.mock('react-dom', () => {
  throw new Error('engine must not import react-dom')
})
vi.mock('@tidemark/react', () => {
  throw new Error('engine must not import @tidemark/react')
})

const SRC = fileURLToPath(new URL('../src', import.meta.url))

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return /\.(ts|tsx|js|mjs)$/.test(entry.name) ? [path] : []
  })
}

/** Code with comments removed and string/template contents blanked, so prose and messages cannot match. */
function codeOnly(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/(^|[^:\\])\/\/.*$/gm, '$1')
    .replace(/'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`/g, '""')
}

/** Module specifiers a file imports, re-exports, requires or imports dynamically. */
function specifiers(text: string): string[] {
  const noComments = text.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/(^|[^:\\])\/\/.*$/gm, '$1')
  const found: string[] = []
  for (const m of noComments.matchAll(/\b(?:from|import|require)\s*\(?\s*['"]([^'"]+)['"]/g)) found.push(m[1] as string)
  return found
}

/** Uses of a DOM global as a free name: `window.x`, `document.x`, `globalThis.window`. */
function domGlobals(text: string): string[] {
  const code = codeOnly(text)
  const uses: string[] = []
  for (const name of ['window', 'document']) {
    // A file may name a local `window` (a window state); then only explicit global access counts.
    const declaresLocal = new RegExp(`(?:\\b(?:const|let|var)\\s+|[(,]\\s*)${name}\\s*[:=,)]`).test(code)
    const free = new RegExp(`(?<![\\w$.])${name}\\s*[.[]`, 'g')
    const global = new RegExp(`\\b(?:globalThis|self)\\s*\\.\\s*${name}\\b`, 'g')
    if (!declaresLocal) for (const m of code.matchAll(free)) uses.push(m[0])
    for (const m of code.matchAll(global)) uses.push(m[0])
  }
  return uses
}

describe('engine without React or DOM', () => {
  it('the React mock is armed: importing react here fails', async () => {
    const react = 'react'
    const error = await import(/* @vite-ignore */ react).then(
      () => null,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(Error)
    // Vitest wraps a throwing factory's error; ours is its cause.
    expect(String((error as Error).cause)).toMatch(/engine must not import react/)
  })

  it('imports and runs a batch with React mocked away and no window or document', async () => {
    expect(typeof (globalThis as { window?: unknown }).window).toBe('undefined')
    expect(typeof (globalThis as { document?: unknown }).document).toBe('undefined')
    const { createEngine, tumbling } = await import('../src/index.ts')
    const engine = createEngine({ windows: tumbling(10), now: () => 0 })
    const changes: string[] = []
    engine.subscribe((batch) => changes.push(...batch.map((c) => c.type)))
    const receipt = engine.ingest([
      { id: 'a', source: 'd1', seq: 1, ts: 1, value: 2 },
      { id: 'b', source: 'd1', seq: 2, ts: 12, value: 3 },
    ])
    engine.tick()
    expect(receipt.accepted).toBe(2)
    expect(changes).toEqual(['on_time', 'provisional'])
    expect(engine.results()[0]).toMatchObject({ start: 0, count: 1, sum: 2, status: 'on_time', basis: 'proven' })
    await engine.close()
  })

  it('no file under packages/engine/src imports React or touches window/document', () => {
    const files = sourceFiles(SRC)
    expect(files.length).toBeGreaterThan(10)
    const offenders = files.flatMap((file) => {
      const text = readFileSync(file, 'utf8')
      const name = relative(SRC, file)
      const react = specifiers(text).filter((s) => /^(react|react-dom|@tidemark\/react)(\/|$)/.test(s))
      return [...react.map((s) => `${name} imports ${s}`), ...domGlobals(text).map((u) => `${name} uses ${u}`)]
    })
    expect(offenders).toEqual([])
  })

  it('the source checks catch what they look for', () => {
    expect(specifiers(`import { useState } from 'react'\nexport * from "react-dom/client"\nawait import('@tidemark/react')`)).toEqual([
      'react',
      'react-dom/client',
      '@tidemark/react',
    ])
    expect(domGlobals('const w = window.innerWidth; document.title = "x"; globalThis.window').sort()).toEqual([
      'document.',
      'globalThis.window',
      'window.',
    ])
    expect(domGlobals('function f(window: W) { return window.key } // window.x\nconst s = "document.cookie"')).toEqual([])
  })
})
