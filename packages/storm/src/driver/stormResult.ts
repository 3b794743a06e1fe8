/** What a finished storm returns. */
import type { StormSnapshot } from '../contract/stormPageApi.ts'
import type { DeviceNetworkMode } from './deviceNetwork.ts'
import type { TruthFigures } from './groundTruth.ts'
import type { ToggleFigures } from './networkToggles.ts'
import type { StormLedger } from './stormLedger.ts'

/**
 * A finished storm's figures.
 *
 * @example
 * const figures: StormFigures = await runStorm(options)
 * console.log(figures.truth.produced, figures.convergenceMs)
 */
export interface StormFigures {
  readonly seed: number
  readonly seconds: number
  /** Pages open (devices + dashboards). */
  readonly pages: number
  readonly devices: number
  readonly dashboards: number
  readonly ingest: { readonly batch: number; readonly everyMs: number }
  /** How long toggling ran, ms (the last toggles are acknowledged after `seconds`). */
  readonly stormMs: number
  readonly network: DeviceNetworkMode
  readonly toggles: ToggleFigures
  /** The truth from the readings the devices reported: produced, counted, late lane, window values. */
  readonly truth: TruthFigures
  /** What the device pages had to show: `own` readings, or the whole `fleet`'s (`StormOptions.devicesShow`). */
  readonly devicesShow: 'own' | 'fleet'
  /** The truth of each device's own readings, by source. */
  readonly deviceTruths: Readonly<Record<string, TruthFigures>>
  /** What the receipts of the batches reported durable said, summed over devices. */
  readonly receipts: { readonly accepted: number; readonly beyondLateness: number; readonly duplicates: number; readonly rejected: number }
  /** Seqs produced but never reported durable, or reported twice. */
  readonly gaps: readonly string[]
  /** Events counted by each dashboard (`counted` of its snapshot). */
  readonly dashboardCounts: readonly number[]
  readonly converged: boolean
  /** ms from the moment the last device was back online until every page was read showing the truth (an upper bound: 250 ms polls). */
  readonly convergenceMs: number
  /** Every page after convergence (or the timeout): devices first, then dashboards. */
  readonly snapshots: readonly StormSnapshot[]
  /** Every durable batch the devices reported. */
  readonly ledger: StormLedger
  /** Everything that contradicts "nothing lost, nothing counted twice, everyone converged"; empty when the storm passed. */
  readonly problems: readonly string[]
}

/**
 * A finished storm: its figures, and its pages, open until `close()`.
 *
 * @example
 * const storm: StormResult = await runStorm(options)
 * expect(storm.problems).toEqual([])
 * await storm.close()
 */
export interface StormResult extends StormFigures {
  /** The printout: seed and replay, pages, toggles (intended against seen), events, convergence. */
  summary(): string
  /** Closes every context and proxy, and stops the server the storm started. */
  close(): Promise<void>
}
