export { visibleState, whenDurable } from './recoveryView.ts'
export { brief, fakeClock, reading, recordChanges } from './scenarioKit.ts'
export { FakeEngine, fakeWindowResult } from './fakeEngine.ts'
