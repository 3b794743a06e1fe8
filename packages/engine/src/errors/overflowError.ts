/**
 * Thrown or reported when a bounded buffer is full and the engine applies
 * backpressure instead of growing.
 *
 * @example
 * try { await writer.write(batch) } catch (e) { if (isOverflowError(e)) slowDown() }
 */
export class OverflowError extends Error {
  /** Which buffer is full (`'engine'`, `'changes() stream'`, …). */
  readonly buffer: string
  /**
   * @example
   * new OverflowError('engine', '3 events refused').message // 'engine is full: 3 events refused'
   */
  constructor(buffer: string, detail: string) {
    super(`${buffer} is full: ${detail}`)
    this.name = 'OverflowError'
    this.buffer = buffer
  }
}

/**
 * Type guard for `OverflowError`, also across realms.
 *
 * @example
 * try {
 *   await engine.writable.getWriter().write(batch)
 * } catch (error) {
 *   if (isOverflowError(error)) console.warn(`${error.buffer} is full`)
 *   else throw error
 * }
 */
export function isOverflowError(error: unknown): error is OverflowError {
  return error instanceof OverflowError || (error instanceof Error && error.name === 'OverflowError')
}
