/**
 * The benchmark's relay tokens: JWTs signed HS256 with the run's secret (the relays verify them
 * with the same `TIDEMARK_AUTH_SECRET`), carrying the claims a production login would issue.
 */
import { SignJWT } from 'jose'
import type { DeviceIdentity } from './fleetLayout.ts'

/** Tokens outlive any run: the relay holds `exp` when a room opens and while it stays open. */
const TOKEN_TTL_SECONDS = 24 * 3600

async function sign(claims: Record<string, unknown>, secret: Uint8Array): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setExpirationTime(Math.floor(Date.now() / 1000) + TOKEN_TTL_SECONDS)
    .sign(secret)
}

/**
 * A device's token: its own room, replica and source only.
 *
 * @example
 * const token = await deviceToken(deviceIdentity(0, 7, 100), secret)
 */
export function deviceToken(device: DeviceIdentity, secret: Uint8Array): Promise<string> {
  return sign({ sub: device.source, role: 'device', rooms: [device.room], replicas: [device.replica], sources: [device.source] }, secret)
}

/**
 * A dashboard's token: every room of its fleet, read-only.
 *
 * @example
 * const token = await dashboardToken('fleet-00', 'fleet-00-dash-0', secret)
 */
export function dashboardToken(fleet: string, name: string, secret: Uint8Array): Promise<string> {
  return sign({ sub: name, role: 'dashboard', rooms: [`${fleet}/*`] }, secret)
}

/**
 * The run's secret as the relays and the clients' signers read it (hex text, 64 bytes of it).
 *
 * @example
 * const secret = secretBytes(process.env.TIDEMARK_AUTH_SECRET ?? '')
 */
export function secretBytes(text: string): Uint8Array {
  if (text.length < 32) throw new Error(`the benchmark's secret must be at least 32 characters, got ${text.length}`)
  return new TextEncoder().encode(text)
}
