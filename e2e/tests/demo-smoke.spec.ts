/**
 * The fleet demo (apps/demo) in real Chromium, served exactly as `pnpm start` serves it
 * (scripts/demo.mjs: build, relay, vite preview; port DEMO_E2E_PORT). Devices reach the
 * dashboard only through their Y.Docs, each in its own room on the relay; the dashboard engine
 * owns no source and follows every room read-only.
 *
 * 1. The page loads without console errors, syncs through the relay, every chart renders
 *    windows, and a device taken offline and back catches up by state-vector exchange and
 *    visibly corrects windows (an on-time ring joined to the corrected value). Screenshot.
 * 2. A device opened in its own `?device=` tab takes over from the dashboard page, and its
 *    document's state reaches the dashboard tab: taken offline and back (a command over the
 *    control channel), its catch-up corrects the dashboard's windows.
 * Waits are on DOM state, bounded; no sleeps.
 */
import { join } from 'node:path'
import { expect, type Page, test } from '@playwright/test'
import { DEMO_E2E_PORT } from '../vite.config.ts'

// Fewer devices than the default twelve: the same machinery, less work for a CI machine shared by many jobs.
const DEVICES = 6
const demoUrl = (devices: number): string => `http://127.0.0.1:${DEMO_E2E_PORT}/?tour=off&devices=${devices}`

/** `HH:MM:SS` (the page's clock format) as seconds of the day. */
function secondsOfDay(text: string | null): number {
  const [h = 0, m = 0, sec = 0] = (text ?? '').trim().split(':').map(Number)
  return h * 3_600 + m * 60 + sec
}

/** `to - from` in seconds, signed, across midnight. */
function secondsBetween(from: number, to: number): number {
  return ((to - from + 86_400 + 43_200) % 86_400) - 43_200
}

/** Collects console errors and page errors of `page`. */
function recordErrors(page: Page, label: string, errors: string[]): void {
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`${label} console: ${message.text()}`)
  })
  page.on('pageerror', (error) => errors.push(`${label} pageerror: ${error.message}`))
}

function deviceRow(page: Page, id: string) {
  return page.locator('.device-row', { has: page.locator('td', { hasText: id }) }).first()
}

/** Takes `id` offline from the dashboard, waits until windows fired without it, brings it back; returns its activity line. */
async function offlineAndBack(page: Page, id: string) {
  const row = deviceRow(page, id)
  await row.getByRole('button', { name: 'Disconnect' }).click()
  await expect(row.locator('.pill')).toHaveText('offline')
  // Offline long enough for windows to fire without it: the dashboard's watermark (which moves on once
  // the silent device is idle, 3 s) passes the moment it went offline by more than two 2 s windows.
  // Its cells for those windows then land late but within the 10 s allowed lateness.
  const offlineAt = secondsOfDay(await page.locator('.activity li', { hasText: `${id} taken offline` }).first().locator('time').textContent())
  const watermark = page.locator('.chip[title*="watermark and how far"] .mono')
  await expect
    .poll(async () => secondsBetween(offlineAt, secondsOfDay(await watermark.textContent())), { timeout: 25_000 })
    .toBeGreaterThanOrEqual(5)
  await expect(page.locator('.column-fallback').first()).toBeAttached()
  await row.getByRole('button', { name: 'Reconnect' }).click()
  await expect(row.locator('.pill')).toHaveText('online')
  const backAt = secondsOfDay(await page.locator('.activity li', { hasText: `${id} back online` }).first().locator('time').textContent())
  const report = page.locator('.activity li', { hasText: `${id} back after` }).first()
  await expect(report).toContainText('window corrections', { timeout: 15_000 })
  // The Late data table (newest first) lists corrections that landed after the reconnect.
  const newestLanded = page.locator('.late-table tbody tr').first().locator('td').first()
  await expect.poll(async () => secondsBetween(backAt, secondsOfDay(await newestLanded.textContent())), { timeout: 10_000 }).toBeGreaterThanOrEqual(0)
  // The correction is visible: each chart's latest correction is a window of the offline spell, drawn as an
  // on-time ring joined to its corrected value.
  await expect(page.locator('.chart-panel .window-detail')).toHaveCount(3)
  for (const detail of await page.locator('.chart-panel .window-detail').all()) {
    await expect(detail.locator('.detail-label')).toHaveText('Latest correction')
    await expect
      .poll(async () => secondsBetween(offlineAt, secondsOfDay((await detail.locator('.detail-time').textContent())?.split('–')[0] ?? '')))
      .toBeGreaterThanOrEqual(-4)
  }
  await expect(page.locator('.on-time-ring').first()).toBeAttached()
  return report
}

// A desktop window: the whole device table fits, so no sticky header covers a row's buttons.
test.use({ viewport: { width: 1440, height: 1700 } })

// About 30 s each on an idle machine; the budget is for CI machines shared by many jobs.
test.describe.configure({ timeout: 180_000 })

test('fleet demo: loads clean, renders windows, offline and back corrects windows', async ({ page }, testInfo) => {
  const errors: string[] = []
  recordErrors(page, 'dashboard', errors)

  await page.goto(demoUrl(DEVICES))
  // scripts/demo.mjs wrote /config.json and the relay answered.
  await expect(page.locator('.chip', { hasText: 'Sync' })).toContainText('relay ws://127.0.0.1:')
  await expect(page.locator('.notice')).toHaveCount(0)
  const charts = page.locator('.chart-panel')
  await expect(charts).toHaveCount(3)
  for (let i = 0; i < 3; i++) {
    await expect.poll(() => charts.nth(i).locator('.value-dot').count(), { timeout: 20_000 }).toBeGreaterThan(2)
  }
  // Every device runs in this page, each connected to its room on the relay; the dashboard follows them all, nothing refused.
  await expect(page.locator('.device-row')).toHaveCount(DEVICES)
  await expect.poll(() => page.locator('.device-row td', { hasText: /^relay connected$/ }).count(), { timeout: 15_000 }).toBe(DEVICES)
  const relayTile = page.locator('.stat', { has: page.locator('.stat-label', { hasText: /^Relay$/ }) })
  await expect(relayTile.locator('.stat-value')).toHaveText('connected')
  await expect(relayTile.locator('.stat-note')).toHaveText(`${DEVICES} rooms followed`)

  await offlineAndBack(page, 'd01')
  await expect(page.locator('.revision-mark').first()).toBeAttached()

  const screenshot = join(testInfo.project.outputDir, 'demo-smoke.png')
  await page.screenshot({ path: screenshot, fullPage: true })
  await testInfo.attach('demo-smoke', { path: screenshot, contentType: 'image/png' })
  expect(errors).toEqual([])
})

test('fleet demo: a ?device= tab takes its device over and its document reaches the dashboard tab', async ({ page, context }, testInfo) => {
  const errors: string[] = []
  recordErrors(page, 'dashboard', errors)
  await page.goto(demoUrl(3))
  const row = deviceRow(page, 'd03')
  // Every engine opens its IndexedDB log at once: slow on a loaded machine.
  await expect(row.locator('.pill')).toHaveText('online', { timeout: 30_000 })

  const [tab] = await Promise.all([context.waitForEvent('page'), row.getByRole('link', { name: 'Tab ↗' }).click()])
  recordErrors(tab, 'device tab', errors)
  await expect(tab.locator('h1')).toContainText('device d03')
  // The tab reopened the dashboard's log of d03 and syncs.
  const tabSync = tab.locator('.stat', { has: tab.locator('.stat-label', { hasText: /^Sync$/ }) }).locator('.stat-value')
  await expect(tabSync).toHaveText('relay connected', { timeout: 15_000 })
  await expect(tab.locator('.recovery-line')).toContainText('Recovered')

  // The dashboard in front again before reading its page: a page behind the focused one gets few
  // animation frames and renders with them (the row once stayed "this page" for 15 s in CI).
  await page.bringToFront()
  // The dashboard page closed its d03 cleanly and let the tab have it.
  await expect(row.locator('td').nth(1)).toHaveText('own tab', { timeout: 15_000 })
  // Its updates keep arriving at the dashboard's copy of its document.
  await expect.poll(async () => row.locator('td').nth(5).textContent(), { timeout: 20_000 }).toMatch(/just now|^\d\.\d s ago/)
  // A dashboard command reaches the tab (control channel); the data comes back through the document only.
  await offlineAndBack(page, 'd03')
  await expect(tab.locator('.pill')).toHaveText('online')

  const screenshot = join(testInfo.project.outputDir, 'demo-device-tab.png')
  await tab.screenshot({ path: screenshot, fullPage: true })
  await testInfo.attach('demo-device-tab', { path: screenshot, contentType: 'image/png' })
  expect(errors).toEqual([])
})
