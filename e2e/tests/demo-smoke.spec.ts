/**
 * The fleet demo (apps/demo) in real Chromium, served exactly as `pnpm start` serves it
 * (scripts/demo.mjs: build, relay, vite preview; port DEMO_E2E_PORT). Every engine runs in a
 * host worker (`@tidemark/worker`): a SharedWorker per device, and one for the dashboard engine.
 * Devices reach the dashboard only through their Y.Docs, each in its own room on the relay; the
 * dashboard engine owns no source and follows every room read-only.
 *
 * 1. The page loads without console errors, every device's host worker syncs through the relay,
 *    every chart renders windows (three metric means, the p95 delivery latency, the devices
 *    reporting, the last two from the engines' aggregates), and a device taken offline and back
 *    catches up by state-vector exchange and visibly corrects windows (an on-time ring joined to
 *    the corrected value), its device count included. Screenshot.
 * 2. A device opened in its own `?device=` tab shares its host worker with the dashboard (the
 *    same instance in both tabs), and its readings keep reaching the dashboard tab: taken
 *    offline and back from the dashboard, its catch-up corrects the dashboard's windows, and
 *    the tab shows it back online. Crashed from the tab, its worker ends; both tabs move to the
 *    next one, which recovers the device from its log.
 * Waits are on DOM state, bounded; no sleeps.
 */
import { join } from 'node:path'
import { expect, type Page, test } from '@playwright/test'
import { DEMO_E2E_PORT } from '../vite.config.ts'

// Fewer devices than the default twelve: the same machinery, less work for a CI machine shared by many jobs.
const DEVICES = 6
/** Temperature, humidity and battery means; p95 delivery latency; devices reporting. */
const CHARTS = 5
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
  // The whole cell: a substring would also match another row's host instance (`fad030c1` holds `d03`).
  return page.locator('.device-row', { has: page.locator('td', { hasText: new RegExp(`^${id}$`) }) }).first()
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
  await expect(page.locator('.chart-panel .window-detail')).toHaveCount(CHARTS)
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
  await expect(charts).toHaveCount(CHARTS)
  for (let i = 0; i < CHARTS; i++) {
    await expect.poll(() => charts.nth(i).locator('.value-dot').count(), { timeout: 20_000 }).toBeGreaterThan(2)
  }
  // Every device runs in a host worker of its own, each connected to its room on the relay; the dashboard follows them all, nothing refused.
  await expect(page.locator('.device-row')).toHaveCount(DEVICES)
  await expect.poll(() => page.locator('.device-row td', { hasText: /^relay connected$/ }).count(), { timeout: 15_000 }).toBe(DEVICES)
  const hosts = await page.locator('.device-row .host-cell').evaluateAll((cells) => cells.map((cell) => ({ text: cell.textContent ?? '', instance: cell.getAttribute('data-host-instance') ?? '' })))
  expect(hosts.every(({ text }) => /^shared [0-9a-f]{8}$/.test(text))).toBe(true)
  expect(new Set(hosts.map(({ instance }) => instance)).size).toBe(DEVICES)
  const relayTile = page.locator('.stat', { has: page.locator('.stat-label', { hasText: /^Relay$/ }) })
  await expect(relayTile.locator('.stat-value')).toHaveText('connected')
  await expect(relayTile.locator('.stat-note')).toHaveText(`${DEVICES} rooms followed`)

  // The aggregates: every device reports in the latest fired window, and the latency chart shows that window's p95
  // delivery latency in seconds, two decimals. How large it is depends on how loaded the machine is (about an upload
  // period, a second, when idle), so only its form is checked here: a positive finite number of seconds.
  const latest = (measure: string) => page.locator(`.chart-panel[data-measure="${measure}"] .chart-latest-value`)
  await expect(latest('devices')).toHaveText(`${DEVICES}devices`, { timeout: 15_000 })
  await expect(latest('latency-p95')).toHaveText(/^\d+\.\d\ds$/)
  const p95 = Number((await latest('latency-p95').textContent())?.replace(/s$/, ''))
  expect(Number.isFinite(p95)).toBe(true)
  expect(p95).toBeGreaterThan(0)
  // Every window with readings has a p95: the latency chart plots a value for every window the devices chart plots
  // (each chart has more than two, above).
  await expect
    .poll(
      () =>
        page.evaluate(() => {
          const dots = (measure: string) => document.querySelectorAll(`.chart-panel[data-measure="${measure}"] .value-dot`).length
          return dots('devices') - dots('latency-p95')
        }),
      { timeout: 10_000, message: 'windows the devices chart plots without a p95 latency' },
    )
    .toBe(0)

  await offlineAndBack(page, 'd01')
  await expect(page.locator('.revision-mark').first()).toBeAttached()
  // Windows that fired without d01 counted one device fewer on time: in the devices chart, a corrected window's
  // on-time ring sits below its dot (fewer devices), and its detail lists the counts it showed.
  const devicesChart = page.locator('.chart-panel[data-measure="devices"]')
  await expect
    .poll(() =>
      devicesChart.locator('.column').evaluateAll((columns) =>
        columns.filter((column) => {
          const ring = column.querySelector('.on-time-ring')
          const dot = column.querySelector('.value-dot')
          return ring !== null && dot !== null && Number(ring.getAttribute('cy')) > Number(dot.getAttribute('cy')) + 1
        }).length,
      ),
    )
    .toBeGreaterThan(0)
  await expect(devicesChart.locator('.window-detail .detail-trail')).toContainText(new RegExp(`r\\d+ ${DEVICES} devices`))
  await expect(page.locator('.chart-panel[data-measure="latency-p95"] .window-detail .detail-trail')).toContainText(/(on time|r\d+) \d+\.\d\d s/)

  const screenshot = join(testInfo.project.outputDir, 'demo-smoke.png')
  await page.screenshot({ path: screenshot, fullPage: true })
  await testInfo.attach('demo-smoke', { path: screenshot, contentType: 'image/png' })
  expect(errors).toEqual([])
})

test('fleet demo: a ?device= tab shares its device host worker, and its readings reach the dashboard tab', async ({ page, context }, testInfo) => {
  const errors: string[] = []
  recordErrors(page, 'dashboard', errors)
  await page.goto(demoUrl(3))
  const row = deviceRow(page, 'd03')
  // Every host opens its IndexedDB log at once: slow on a loaded machine.
  await expect(row.locator('.pill')).toHaveText('online', { timeout: 30_000 })
  const hostCell = row.locator('.host-cell')
  const instance = await hostCell.getAttribute('data-host-instance')
  expect(instance).toMatch(/^[0-9a-f-]{36}$/)

  const [tab] = await Promise.all([context.waitForEvent('page'), row.getByRole('link', { name: 'Tab ↗' }).click()])
  recordErrors(tab, 'device tab', errors)
  await expect(tab.locator('h1')).toContainText('device d03')
  // The tab reached the same worker: the same host instance, already running and synced.
  await expect(tab.locator('.host-chip')).toHaveAttribute('data-host-instance', instance ?? '')
  await expect(tab.locator('.host-chip')).toContainText('shared')
  const tabFact = (label: string) => tab.locator('.stat', { has: tab.locator('.stat-label', { hasText: new RegExp(`^${label}$`) }) }).locator('.stat-value')
  await expect(tabFact('Sync')).toHaveText('relay connected', { timeout: 15_000 })
  const seqInTab = Number((await tabFact('Seq').textContent())?.replace(/,/g, ''))
  expect(seqInTab).toBeGreaterThan(0)

  // The dashboard in front again before reading its page: a page behind the focused one gets few
  // animation frames and renders with them.
  await page.bringToFront()
  // The dashboard hears the tab, still on the same host, whose one producer goes on from where it was.
  await expect(hostCell).toContainText('· tab', { timeout: 15_000 })
  await expect(hostCell).toHaveAttribute('data-host-instance', instance ?? '')
  await expect.poll(async () => Number((await row.locator('td').nth(6).textContent())?.replace(/,/g, '')), { timeout: 10_000 }).toBeGreaterThan(seqInTab)
  // Its readings keep arriving at the dashboard's copy of its document.
  await expect.poll(async () => row.locator('td').nth(5).textContent(), { timeout: 20_000 }).toMatch(/just now|^\d\.\d s ago/)
  // A dashboard command reaches the host both tabs share; the data comes back through the document only.
  await offlineAndBack(page, 'd03')
  await tab.bringToFront()
  await expect(tab.locator('.pill')).toHaveText('online')

  // Crashed from the tab: the worker ends without closing its engine, both tabs reach the next one, which recovered the log.
  await tab.getByRole('button', { name: 'Crash' }).click()
  await expect(tab.locator('.host-chip')).not.toHaveAttribute('data-host-instance', instance ?? '', { timeout: 15_000 })
  await expect(tabFact('Host restarts')).toHaveText('1', { timeout: 15_000 })
  await expect(tab.locator('.recovery-line')).toContainText(/Recovered .* 0 lost; [1-9][\d,]* readings held/, { timeout: 15_000 })
  await expect(tab.locator('.pill')).toHaveText('online')
  const next = await tab.locator('.host-chip').getAttribute('data-host-instance')
  await page.bringToFront()
  await expect(hostCell).toHaveAttribute('data-host-instance', next ?? '', { timeout: 15_000 })
  await expect(row.locator('.pill')).toHaveText('online')
  await expect(page.locator('.activity li', { hasText: "d03's host is back" }).first()).toContainText('0 lost', { timeout: 15_000 })

  const screenshot = join(testInfo.project.outputDir, 'demo-device-tab.png')
  await tab.screenshot({ path: screenshot, fullPage: true })
  await testInfo.attach('demo-device-tab', { path: screenshot, contentType: 'image/png' })
  expect(errors).toEqual([])
})

test('fleet demo: at a phone width the page fits the screen, its status chips and tiles in view', async ({ page }) => {
  const errors: string[] = []
  recordErrors(page, 'dashboard', errors)
  await page.setViewportSize({ width: 390, height: 844 })
  await page.goto(demoUrl(2))
  const relayTile = page.locator('.stat', { has: page.locator('.stat-label', { hasText: /^Relay$/ }) })
  await expect(relayTile.locator('.stat-value')).toHaveText('connected', { timeout: 30_000 })
  // Nothing makes the page itself wider than the screen: only the tables scroll sideways, inside their panels.
  const widths = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, screen: document.documentElement.clientWidth }))
  expect(widths.page).toBeLessThanOrEqual(widths.screen)
  // The Sync and Watermark chips and the dashboard engine's tiles are on screen without scrolling sideways.
  for (const box of [
    await page.locator('.chip', { hasText: 'Sync' }).boundingBox(),
    await page.locator('.chip', { hasText: 'Watermark' }).boundingBox(),
    await relayTile.boundingBox(),
  ]) {
    expect(box).not.toBeNull()
    expect((box?.x ?? -1) >= 0 && (box?.x ?? 0) + (box?.width ?? Number.POSITIVE_INFINITY) <= widths.screen).toBe(true)
  }
  // The charts take the screen's width and draw windows.
  const chart = page.locator('.chart-panel').first()
  await expect.poll(() => chart.locator('.value-dot').count(), { timeout: 20_000 }).toBeGreaterThan(2)
  const chartBox = await chart.boundingBox()
  expect((chartBox?.x ?? 0) + (chartBox?.width ?? Number.POSITIVE_INFINITY)).toBeLessThanOrEqual(widths.screen)
  expect(errors).toEqual([])
})
