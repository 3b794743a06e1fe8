/**
 * What a store handed back, as bytes. Every record is stored as bytes; anything else under
 * one of its keys was written by someone else, and is reported with what it is.
 */

/** `value` as bytes (an ArrayBuffer, also from another realm, or a view on one), or null. */
export function storedBytes(value: unknown): Uint8Array | null {
  // toString also catches ArrayBuffers from another realm (a worker, a test VM).
  if (value instanceof ArrayBuffer || Object.prototype.toString.call(value) === '[object ArrayBuffer]') {
    return new Uint8Array(value as ArrayBuffer)
  }
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
  return null
}

/** Why `value`, which `storedBytes` refused, is not a record. */
export function notBytes(value: unknown): string {
  const what = value === null ? 'null' : typeof value === 'object' ? `an object (${Object.prototype.toString.call(value)})` : `a ${typeof value}`
  return `stored value is ${what}, not bytes`
}
