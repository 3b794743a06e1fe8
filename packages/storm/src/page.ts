/**
 * `@tidemark/storm/page`: what an app's page calls to take part in a storm (`beginStormPage`),
 * and the contract it shares with the driver. Runs in the browser; no Playwright, no Node.
 *
 * @module @tidemark/storm/page
 */
export { beginStormPage, type StormApp, type StormCommand, type StormPageSession } from './page/beginStormPage.ts'
export type { StormEngine } from './page/deviceIngest.ts'
export { browserEnvironment, type StormPageEnvironment } from './page/stormPageEnvironment.ts'
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
