/**
 * Seeded offline/online toggling of devices, on schedule.
 *
 * Each device gets its own seeded sequence of intervals, drawn uniformly from `[min, max)`
 * ms, laid out on an absolute timeline: toggle `i` is due at `start + d1 + … + di`,
 * however long earlier toggles took. A toggle (a `NetworkSwitch`: `context.setOffline`, or a
 * cut sync path plus an overridden `navigator.onLine`) is issued at its due time and NOT
 * awaited before the next one: the browser acknowledges it only after its network service and
 * the page's renderer have handled it, so under load an awaited toggle waits seconds and the
 * schedule stretches (awaited, six devices got through 70 toggles in a 60 s storm). Commands to one
 * page keep their order, so the last one wins.
 *
 * Three clocks are measured and compared with what was intended: when each toggle was
 * issued (driver), when Playwright acknowledged it, and when the page saw the
 * `offline`/`online` event (`StormTransition`, reported by the page).
 */
import type { StormTransition } from '../contract/stormPageApi.ts'
import type { NetworkSwitch } from './deviceNetwork.ts'
import { type Distribution, distribution, formatDistribution } from './distribution.ts'
import { toggleIntervals, toggleRange } from './toggleSchedule.ts'

/**
 * One toggle of one device: when it was due, issued and acknowledged.
 *
 * @example
 * const record = toggles.records[0] // { device: 0, offline: true, intervalMs: 273.4, dueAt, issuedAt, ackAt }
 * const ackMs = (record.ackAt ?? Number.NaN) - record.issuedAt
 */
export interface ToggleRecord {
  readonly device: number
  readonly offline: boolean
  /** The drawn interval before it, ms. */
  readonly intervalMs: number
  readonly dueAt: number
  issuedAt: number
  /** When the switch resolved (undefined until then). */
  ackAt?: number
}

/**
 * What the schedule intended against what happened, as distributions (see `describe`).
 *
 * @example
 * const figures = toggles.figures(transitions)
 * expect(figures.acknowledged).toBe(figures.issued)
 */
export interface ToggleFigures {
  /** Toggles issued (every one the schedule drew before the end), acknowledged, and seen by the pages. */
  readonly issued: number
  readonly acknowledged: number
  readonly observed: number
  readonly perDevice: readonly { readonly issued: number; readonly observed: number; readonly maxInFlight: number }[]
  /** Drawn intervals (the intended pace). */
  readonly intendedMs: Distribution
  /** Issue time minus due time (how late the driver fired). */
  readonly issueLagMs: Distribution
  /** Switch round trip (issue to acknowledgement). */
  readonly ackMs: Distribution
  /** Intervals between consecutive transitions a page saw (the achieved pace, as the app felt it). */
  readonly observedMs: Distribution
  /** Issue to the page's matching `offline`/`online` event. */
  readonly observedLagMs: Distribution
}

/**
 * Toggles every device offline and online at seeded random intervals until `endsAt`;
 * `run()` resolves once every issued toggle is acknowledged and leaves devices as the last
 * toggle set them. A switch that fails rejects `run()`.
 *
 * @example
 * const toggles = new NetworkToggles(devices.map((d) => emulatedNetwork(d.context)), { seed: 42, intervalMs: [50, 500] })
 * await toggles.run(Date.now() + 60_000)
 * console.log(describeToggles(toggles.figures(pageTransitions)))
 */
export class NetworkToggles {
  readonly records: ToggleRecord[] = []
  readonly #switches: readonly NetworkSwitch[]
  readonly #seed: number
  readonly #intervalMs: readonly [number, number]
  readonly #maxInFlight: number[]
  #startedAt = 0
  #endedAt = 0

  constructor(switches: readonly NetworkSwitch[], options: { readonly seed: number; readonly intervalMs: readonly [number, number] }) {
    this.#switches = switches
    this.#seed = options.seed
    this.#intervalMs = toggleRange(options.intervalMs)
    this.#maxInFlight = switches.map(() => 0)
  }

  /** When the schedule started and stopped issuing toggles. */
  get window(): { readonly startedAt: number; readonly endedAt: number } {
    return { startedAt: this.#startedAt, endedAt: this.#endedAt }
  }

  /** Issues every device's toggles until `endsAt` (ms since epoch); resolves once each is acknowledged. */
  async run(endsAt: number): Promise<void> {
    this.#startedAt = Date.now()
    await Promise.all(this.#switches.map((toggle, k) => this.#toggle(toggle, k, endsAt)))
    this.#endedAt = Math.max(endsAt, ...this.records.map((r) => r.ackAt ?? 0))
  }

  async #toggle(toggle: NetworkSwitch, device: number, endsAt: number): Promise<void> {
    // Seeded per device, independent of timing: the same seed draws the same schedule (toggleSchedule).
    const nextInterval = toggleIntervals(this.#seed, device, this.#intervalMs)
    const inFlight: Promise<void>[] = []
    const failures: unknown[] = []
    let inFlightNow = 0
    let offline = false
    let dueAt = this.#startedAt
    for (;;) {
      const intervalMs = nextInterval()
      dueAt += intervalMs
      if (dueAt >= endsAt) break
      const wait = dueAt - Date.now()
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
      offline = !offline
      const record: ToggleRecord = { device, offline, intervalMs, dueAt, issuedAt: Date.now() }
      this.records.push(record)
      inFlightNow++
      this.#maxInFlight[device] = Math.max(this.#maxInFlight[device] ?? 0, inFlightNow)
      inFlight.push(
        toggle(offline).then(
          () => {
            record.ackAt = Date.now()
            inFlightNow--
          },
          (error: unknown) => {
            failures.push(error)
          },
        ),
      )
    }
    await Promise.all(inFlight)
    if (failures.length > 0) throw failures[0]
  }

  /**
   * Compares the schedule with what happened; `transitions[k]` is what device `k`'s page saw
   * (transitions after the schedule ended are ignored).
   */
  figures(transitions: readonly (readonly StormTransition[])[]): ToggleFigures {
    const observedMs: number[] = []
    const observedLagMs: number[] = []
    const perDevice = this.#switches.map((_, k) => {
      const issued = this.records.filter((r) => r.device === k)
      const seen = (transitions[k] ?? []).filter((t) => t.at >= this.#startedAt && t.at <= this.#endedAt)
      for (let i = 1; i < seen.length; i++) observedMs.push((seen[i] as StormTransition).at - (seen[i - 1] as StormTransition).at)
      // Pair each issued toggle with the next transition of the same direction the page saw after it.
      let next = 0
      for (const record of issued) {
        while (next < seen.length && ((seen[next] as StormTransition).online === record.offline || (seen[next] as StormTransition).at < record.issuedAt)) next++
        if (next >= seen.length) break
        observedLagMs.push((seen[next] as StormTransition).at - record.issuedAt)
        next++
      }
      return { issued: issued.length, observed: seen.length, maxInFlight: this.#maxInFlight[k] ?? 0 }
    })
    return {
      issued: this.records.length,
      acknowledged: this.records.filter((r) => r.ackAt !== undefined).length,
      observed: perDevice.reduce((sum, d) => sum + d.observed, 0),
      perDevice,
      intendedMs: distribution(this.records.map((r) => r.intervalMs)),
      issueLagMs: distribution(this.records.map((r) => r.issuedAt - r.dueAt)),
      ackMs: distribution(this.records.flatMap((r) => (r.ackAt === undefined ? [] : [r.ackAt - r.issuedAt]))),
      observedMs: distribution(observedMs),
      observedLagMs: distribution(observedLagMs),
    }
  }
}

/**
 * Toggle figures as a few printable lines: counts, then the intended, page-seen, issue-lag,
 * acknowledgement and issue-to-page distributions.
 *
 * @example
 * console.log(describeToggles(toggles.figures(transitions)))
 * // toggles: issued=1315 acknowledged=1315 seen by pages=1315 (per device issued/seen/max in flight: 216/216/4 ...)
 */
export function describeToggles(figures: ToggleFigures): string {
  return [
    `toggles: issued=${figures.issued} acknowledged=${figures.acknowledged} seen by pages=${figures.observed} ` +
      `(per device issued/seen/max in flight: ${figures.perDevice.map((d) => `${d.issued}/${d.observed}/${d.maxInFlight}`).join(' ')})`,
    `  intended interval  ${formatDistribution(figures.intendedMs)}`,
    `  page-seen interval ${formatDistribution(figures.observedMs)}`,
    `  issue lag          ${formatDistribution(figures.issueLagMs)}`,
    `  switch ack         ${formatDistribution(figures.ackMs)}`,
    `  issue→page event   ${formatDistribution(figures.observedLagMs)}`,
  ].join('\n')
}
