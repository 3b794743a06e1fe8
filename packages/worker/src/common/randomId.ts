/**
 * A random UUID (version 4). `crypto.randomUUID` exists in secure contexts only; a page on
 * plain http from a LAN address (and its workers) has `crypto.getRandomValues` alone, so the
 * id is made from that there.
 *
 * @example
 * const tab = randomId() // '3b241101-e2bb-4255-8caf-4136c566a962'
 */
export function randomId(): string {
  const crypto = globalThis.crypto
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID()
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
