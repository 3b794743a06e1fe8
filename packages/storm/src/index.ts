/**
 * `@tidemark/storm`: the storm driver, for a Playwright suite (Node). It opens an app's storm
 * page as devices and dashboards, cuts each device's network on a seeded schedule, collects
 * the durable ledger, compares every page with the ground truth and prints a report. The page
 * side is `@tidemark/storm/page`; the contract between them is re-exported here.
 *
 * @module @tidemark/storm
 */
export { type DeviceNetworkMode, emulatedNetwork, type NetworkSwitch, partitionedNetwork } from './driver/deviceNetwork.ts'
export { digestDiff } from './driver/digestDiff.ts'
export { type Distribution, distribution, formatDistribution } from './driver/distribution.ts'
export { type DeviceOutcome, groundTruth, type StormTruth, type TruthFigures, tumblingTruth } from './driver/groundTruth.ts'
export { describeToggles, NetworkToggles, type ToggleFigures, type ToggleRecord } from './driver/networkToggles.ts'
export { type RunningStorm, runStorm, type StormOptions, type StormPageSlot, type StormServer } from './driver/runStorm.ts'
export { seeded, stormSeed } from './driver/seeded.ts'
export { type LedgerTotals, StormLedger } from './driver/stormLedger.ts'
export {
  closeStormApp,
  openStormPage,
  type StormPage,
  snapshotOf,
  startIngest,
  statusChangesOf,
  stopIngest,
  stormCommand,
  stormReady,
  transitionsOf,
  waitForConvergence,
  waitForTruth,
} from './driver/stormPage.ts'
export { stormProblems } from './driver/stormProblems.ts'
export type { StormFigures, StormResult } from './driver/stormResult.ts'
export { describeStorm } from './driver/stormSummary.ts'
export { type SyncProxy, startSyncProxy } from './driver/syncProxy.ts'
export { type ScheduledToggle, toggleIntervals, toggleRange, toggleSchedule } from './driver/toggleSchedule.ts'
export {
  STORM_REPORT_BINDING,
  type StormBatchReport,
  type StormGlobals,
  type StormIngest,
  type StormPageApi,
  type StormRole,
  type StormSnapshot,
  type StormStatusChange,
  type StormTransition,
} from './contract/stormPageApi.ts'
export { parseStormQuery, type StormQuery, stormPageUrl } from './contract/stormQuery.ts'
export { type StormReading, type StragglingReadingsOptions, stormReading, stragglingReadings } from './contract/stormReading.ts'
export { type DigestRow, windowDigest } from './contract/windowDigest.ts'
