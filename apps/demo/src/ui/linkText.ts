import type { DeviceStatus } from '../fleet/deviceStatus.ts'

/**
 * A device's link as the tables show it: its room on the relay (the document's sync status
 * there, or the relay's refusal), or its tab channel when the fleet has no relay.
 *
 * @example
 * linkText(status) // 'relay connected', 'relay refused: tidemark:refused foreign-source d02', 'tabs connected'
 */
export function linkText(status: DeviceStatus): string {
  if (status.relayState === null) return `tabs ${status.syncState}`
  if (status.relayRefusal !== null) return `relay refused: ${status.relayRefusal}`
  return `relay ${status.relayState}`
}
