/**
 * `openEngine` was given a log written under another configuration (window specs, allowed
 * lateness, aggregates): its state cannot be restored into this engine, and its records would
 * replay into other windows. Nothing of the log was read into an engine, and the log is left
 * as it is. A new configuration takes a log of its own (a new persistence name), and the old
 * log is opened under its own options until what it holds reached peers; see the recipe
 * "Changing the configuration".
 *
 * @example
 * try {
 *   engine = await openEngine({ ...fleetOptions, persistence })
 * } catch (error) {
 *   if (isLogConfigurationError(error)) console.warn(`this log counts ${error.logged}`)
 *   throw error
 * }
 */
export class LogConfigurationError extends Error {
  override readonly name = 'LogConfigurationError'
  /** The configuration the log was written under. */
  readonly logged: string
  /** This engine's configuration. */
  readonly expected: string

  /**
   * @example
   * const error = new LogConfigurationError('{"windows":["tumbling:60000"],"allowedLateness":0}', '{"windows":["tumbling:60000"],"allowedLateness":600000}')
   * error.logged // '{"windows":["tumbling:60000"],"allowedLateness":0}'
   */
  constructor(logged: string, expected: string) {
    super(`openEngine: this log was written under configuration ${JSON.stringify(logged)}, this engine has ${JSON.stringify(expected)}: open a log of its own for it (a new persistence name)`)
    this.logged = logged
    this.expected = expected
  }
}

/**
 * Narrows an error (what `openEngine` rejected with) to `LogConfigurationError`, also across realms.
 *
 * @example
 * openEngine(options).catch((error) => { if (isLogConfigurationError(error)) openUnderNewName() })
 */
export function isLogConfigurationError(error: unknown): error is LogConfigurationError {
  return error instanceof LogConfigurationError || (error instanceof Error && error.name === 'LogConfigurationError')
}
