/**
 * Reported (never thrown into Yjs) when a replica sharing the doc uses another window
 * configuration or doc schema: its cells mean something else, so none of them is merged.
 *
 * @example
 * bindDoc(createEngine({ windows }), doc, { onError: (e) => { if (isConfigurationMismatchError(e)) warn(e.message) } })
 */
export class ConfigurationMismatchError extends Error {
  /** The replica whose state is refused. */
  readonly replicaId: string
  /** This replica's configuration fingerprint. */
  readonly expected: string
  /** The peer's fingerprint as written in the doc (`null` when its meta entry is malformed). */
  readonly received: string | null

  /**
   * @example
   * new ConfigurationMismatchError('r2', 'cfg-a', 'cfg-b').replicaId // 'r2'
   */
  constructor(replicaId: string, expected: string, received: string | null, detail?: string) {
    super(
      `replica ${JSON.stringify(replicaId)} uses ${
        received === null ? 'an unreadable configuration' : `configuration ${JSON.stringify(received)}`
      }, this replica uses ${JSON.stringify(expected)}: its state is not merged${detail === undefined ? '' : ` (${detail})`}`,
    )
    this.name = 'ConfigurationMismatchError'
    this.replicaId = replicaId
    this.expected = expected
    this.received = received
  }
}

/**
 * Type guard for `ConfigurationMismatchError`, also across realms.
 *
 * @example
 * const engine = createEngine({ windows: tumbling(60_000) })
 * bindDoc(engine, doc, {
 *   onError: (error) => {
 *     if (isConfigurationMismatchError(error)) console.warn(`peer ${error.replicaId} counts other windows`)
 *   },
 * })
 */
export function isConfigurationMismatchError(error: unknown): error is ConfigurationMismatchError {
  return (
    error instanceof ConfigurationMismatchError || (error instanceof Error && error.name === 'ConfigurationMismatchError')
  )
}
