/** Window spec ids the tests use with `FakeEngine`. */
export const MINUTE = 'tumbling:60000'
export const HOUR = 'tumbling:3600000'
