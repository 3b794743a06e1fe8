/**
 * Thrown or reported when a bounded buffer is full and the engine applies
 * backpressure instead of growing.
 *
 * @example
 * try { await writer.write(batch) } catch (e) { if (isOverflowError(e)) slowDown() }
 */
export class OverflowError extends Error {
  readonly buffer: string
  constructor(buffer: string, detail: string) {
    super(`${buffer} is full: ${detail}`)
    this.name = 'OverflowError'
    this.buffer = buffer
  }
}

/** Type guard for `OverflowError`, also across realms. */
export function isOverflowError(error: unknown): error is OverflowError {
  return error instanceof OverflowError || (error instanceof Error && error.name === 'OverflowError')
}
