/**
 * The e2e storm app's engine configuration, shared by its page (`storm.ts`) and its tests:
 * every storm page runs it (peers with another one are refused), and the tests' ground truth
 * (`tumblingTruth`) is computed with it. Devices ingest `@tidemark/storm`'s default
 * `stormReading`, made for exactly this window and lateness.
 */

/** One tumbling window of this many ms. */
export const STORM_WINDOW_MS = 1_000
/** Allowed lateness, ms. */
export const STORM_LATENESS_MS = 2_000
