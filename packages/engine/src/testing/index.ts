/**
 * `@tidemark/engine/testing`: what tests of an app or adapter build on: a fake processing-time
 * clock and timers on it, event and change helpers, a scripted `FakeEngine`, views of recovered state, and an
 * engine on the per-window reference placement.
 *
 * @module @tidemark/engine/testing
 */
export { visibleState, whenDurable } from './recoveryView.ts'
export { brief, fakeClock, reading, recordChanges } from './scenarioKit.ts'
export { FakeEngine, fakeWindowResult } from './fakeEngine.ts'
export { ManualTimers } from './manualTimers.ts'
export { createPerWindowEngine } from './perWindowEngine.ts'
