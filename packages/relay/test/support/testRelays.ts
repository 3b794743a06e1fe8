import { type Relay, type RelayOptions, startRelay } from '../../src/index.ts'
import { freshDataDir } from './dataDirs.ts'
import { SECRET } from './roomClients.ts'

/**
 * Starts a relay in the test's process, on a free port, with the tests' secret, a data directory
 * of its own (default a fresh one), a 20 ms write window and no log; `options` override any of
 * them. The relay goes into `relays`, which the test file closes after its tests.
 *
 * @example
 * const relay = await startTestRelay(relays, { limits: { maxRooms: 8 } })
 */
export async function startTestRelay(relays: Relay[], options: Partial<RelayOptions> = {}, dataDir = freshDataDir()): Promise<Relay> {
  const relay = await startRelay({ port: 0, store: { dataDir }, auth: { secret: SECRET }, persistence: { writeWindowMs: 20 }, log: () => undefined, ...options })
  relays.push(relay)
  return relay
}
