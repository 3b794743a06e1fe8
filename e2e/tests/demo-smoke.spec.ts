/**
 * The fleet demo (apps/demo, issue 7) in real Chromium, served exactly as `pnpm start`
 * serves it (scripts/demo.mjs: build, sync server, vite preview; port DEMO_E2E_PORT).
 * The page loads without console errors, every chart renders windows, and a device taken
 * offline and back lands a backlog that visibly corrects windows (an on-time ring joined
 * to the corrected value). Waits are on DOM state, bounded; no sleeps.
 */
import { expect, test } from '@playwright/test'
import { DEMO_E2E_PORT } from '../vite.config.ts'

const DEMO_URL = `http://127.0.0.1:${DEMO_E2E_PORT}/?tour=off`
const DEVICE = 'd01'

/** `HH:MM:SS` (the page's clock format) as seconds of the day. */
function secondsOfDay(text: string | null): number {
  const [h = 0, m = 0, sec = 0] = (text ?? '').trim().split(':').map(Number)
  return h * 3_600 + m * 60 + sec
}

/** `to - from` in seconds, signed, across midnight. */
function secondsBetween(from: number, to: number): number {
  return ((to - from + 86_400 + 43_200) % 86_400) - 43_200
}

// A desktop window: the whole device table fits, so no sticky header covers a row's buttons.
test.use({ viewport: { width: 1440, height: 1600 } })

test('fleet demo: loads clean, renders windows, offline and back corrects windows', async ({ page }, testInfo) => {
  test.setTimeout(60_000)
  const errors: string[] = []
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`)
  })
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`))

  await page.goto(DEMO_URL)
  const charts = page.locator('.chart-panel')
  await expect(charts).toHaveCount(3)
  // Every chart has fired windows on screen.
  for (let i = 0; i < 3; i++) {
    await expect.poll(() => charts.nth(i).locator('.value-dot').count(), { timeout: 15_000 }).toBeGreaterThan(2)
  }

  const row = page.locator('.device-row', { has: page.locator('td', { hasText: DEVICE }) }).first()
  await row.getByRole('button', { name: 'Disconnect' }).click()
  await expect(row.locator('.pill')).toHaveText('offline')
  // Offline long enough for windows to fire without it: the dashboard's watermark (which moves on once
  // the silent device is idle, 3 s) passes the moment it went offline by more than two 2 s windows.
  // Its readings for those windows are then late but still within the 10 s allowed lateness.
  const offlineAt = secondsOfDay(await page.locator('.activity li', { hasText: `${DEVICE} taken offline` }).locator('time').textContent())
  const watermark = page.locator('.chip[title*="watermark and how far"] .mono')
  await expect
    .poll(async () => secondsBetween(offlineAt, secondsOfDay(await watermark.textContent())), { timeout: 25_000 })
    .toBeGreaterThanOrEqual(5)
  await expect(page.locator('.column-fallback').first()).toBeAttached()

  const ringsBefore = await page.locator('.on-time-ring').count()
  await row.getByRole('button', { name: 'Reconnect' }).click()
  await expect(row.locator('.pill')).toHaveText('online')
  const backlog = page.locator('.activity li', { hasText: `${DEVICE} backlog of` }).first()
  await expect(backlog).toContainText('late (windows corrected)', { timeout: 15_000 })
  // The correction is visible: more windows now show an on-time ring joined to a corrected value.
  await expect.poll(() => page.locator('.on-time-ring').count(), { timeout: 10_000 }).toBeGreaterThan(ringsBefore)
  await expect(page.locator('.revision-mark').first()).toBeAttached()

  const screenshot = testInfo.outputPath('demo-smoke.png')
  await page.screenshot({ path: screenshot, fullPage: true })
  await testInfo.attach('demo-smoke', { path: screenshot, contentType: 'image/png' })
  expect(errors).toEqual([])
})
