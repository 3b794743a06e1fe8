/**
 * The README's Late data table, and the figures its Decisions and Limits name: the rows the
 * table lists (newest first, `correction` or `after final`, a correction counted once by its
 * window and revision), retention, the hosts' frame, and the reconnect bound.
 */
import { readFileSync } from 'node:fs'
import type { WindowChange, WindowResult } from '@tidemark/engine'
import { describe, expect, it } from 'vitest'
import { CorrectionLedger } from '../src/fleet/correctionLedger.ts'
import { deviceHostOptions } from '../src/fleet/deviceHost.ts'
import { CHART_WINDOWS, DEFAULT_SETTINGS, dashboardEngineOptions, fleetEngineOptions, MAX_DEVICES } from '../src/fleet/fleetSettings.ts'
import type { HostPlatform } from '../src/fleet/hostPlatform.ts'
import { DEVICE_RECONNECT_BOUND_MS, RELAY_RECONNECT } from '../src/fleet/relayReconnect.ts'

/** A correction of the window of `key` at `start` to `revision`, from a previous result that was `final` or not. */
function correction(key: string, start: number, revision: number, final = false): WindowChange {
  const result = { window: 'tumbling:2000', key, start, end: start + 2_000, count: revision + 1, sum: 10 * revision, mean: 10 * revision, revision, final: false } as unknown as WindowResult
  const previous = { ...result, revision: revision - 1, mean: 10 * (revision - 1), final } as WindowResult
  return { type: 'correction', result, previous } as unknown as WindowChange
}

describe('Late data', () => {
  it('lists corrections newest first, each counted once by window and revision, `after final` when the window was final', () => {
    const ledger = new CorrectionLedger()
    ledger.record(ledger.fresh([correction('temperature', 0, 1), correction('humidity', 0, 1, true)]), 1_000, () => 0)
    ledger.record(ledger.fresh([correction('temperature', 2_000, 1)]), 2_000, () => 0)
    expect(ledger.lateCorrections.map((row) => [row.key, row.start, row.revision, row.afterFinal, row.at])).toEqual([
      ['temperature', 2_000, 1, false, 2_000],
      ['humidity', 0, 1, true, 1_000],
      ['temperature', 0, 1, false, 1_000],
    ])
    // The mirror handing the same revision out again is no new correction; a later revision is.
    expect(ledger.fresh([correction('temperature', 0, 1), correction('humidity', 0, 1, true)])).toEqual([])
    expect(ledger.fresh([correction('temperature', 0, 2)]).map((c) => c.result.revision)).toEqual([2])
    expect(ledger.lateCorrections[1]).toMatchObject({ key: 'humidity', previousMean: 0, mean: 10 })
  })
})

/** The README, its lines joined (a sentence may wrap anywhere). */
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8').replace(/\s+/g, ' ')

/** The number the README states where `pattern` (one capture group) matches, once. */
function stated(pattern: RegExp): number {
  const found = [...README.matchAll(new RegExp(pattern.source, 'g'))]
  expect(found.length, `the README states ${pattern} once`).toBe(1)
  return Number((found[0] as RegExpMatchArray)[1])
}

describe('Decisions and Limits: the figures the README names are the code’s', () => {
  it('retention is the chart’s windows, on the devices and the dashboard', () => {
    const windows = stated(/Retention\*\* is the chart's (\d+) windows/)
    expect(CHART_WINDOWS).toBe(windows)
    const settings = { ...DEFAULT_SETTINGS, windowMs: 5_000 }
    expect(fleetEngineOptions(settings, () => 0).retention).toBe(windows * 5_000)
    expect(dashboardEngineOptions(settings, () => 0).retention).toBe(windows * 5_000)
  })

  it('a device’s host sends its pages changes at most every frameMs', () => {
    expect(deviceHostOptions('d01', {} as HostPlatform).frameMs).toBe(stated(/sends its pages changes at most every (\d+) ms \(`frameMs`\)/))
  })

  it('relay reconnects: their start and cap, and how long a device is awaited (the cap and 2 s to be heard)', () => {
    const capMs = 1_000 * stated(/attempt `n` waits up to `min\((\d+) s, \d+ ms · 2\^n\)`/)
    const baseMs = stated(/attempt `n` waits up to `min\(\d+ s, (\d+) ms · 2\^n\)`/)
    expect(RELAY_RECONNECT).toEqual({ baseMs, capMs })
    expect(DEVICE_RECONNECT_BOUND_MS).toBe(1_000 * stated(/(\d+) s passed \(`DEVICE_RECONNECT_BOUND_MS`/))
    expect(DEVICE_RECONNECT_BOUND_MS).toBe(capMs + 2_000)
  })

  it('a fleet has at most MAX_DEVICES devices', () => {
    expect(MAX_DEVICES).toBe(stated(/memory and sockets grow with the fleet \(at most (\d+) devices\)/))
  })
})
