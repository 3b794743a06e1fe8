/**
 * What the storm page does when the driver asks it to act as a hostile peer: write into its
 * document, or into a room it may only read, what the relay must refuse. Every forged cell
 * counts under the key `forged`, so a test can tell that none of it ever reached a dashboard.
 */
import { packCellGroup } from '@tidemark/engine'
import type { StormCommand } from '@tidemark/storm/page'
import { type DocEntry, type Relay, writeGroupEntry } from '@tidemark/yjs'
import * as Y from 'yjs'
import { STORM_WINDOW_MS } from './stormConfig.ts'

/** The key of every forged cell. */
export const FORGED_KEY = 'forged'

function positiveCount(command: string, count: unknown): number {
  if (typeof count !== 'number' || !Number.isSafeInteger(count) || count <= 0) throw new RangeError(`${command}: count must be a positive integer, got ${String(count)}`)
  return count
}

function name(command: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') throw new TypeError(`${command}: needs a name, got ${String(value)}`)
  return value
}

/** A well-formed group entry of `source`: one cell of key `forged` counting 1000 readings. */
function forgedGroup(source: string): DocEntry {
  const start = Math.floor(Date.now() / STORM_WINDOW_MS) * STORM_WINDOW_MS
  // Written by the schema's own writer, so the relay can only refuse it for whose it is.
  const cell = { count: 1000, sum: 1000, min: 1, max: 1, maxTs: start + 1, version: 1 }
  return writeGroupEntry(packCellGroup(`tumbling:${STORM_WINDOW_MS}`, start, source, [FORGED_KEY], [cell]))
}

/**
 * A device page's hostile commands (`StormApp.commands`), each a write into `doc()` (its room's
 * doc) that the relay refuses:
 *
 * - `writeMalformed(count)` registers a fake replica under this page's configuration and writes
 *   `count` malformed entries into its log (half a group whose one cell counts NaN events, half
 *   a clock naming another writer): `foreign-meta`;
 * - `writeMalformedOwn(count)`: `count` misshapen entries in this page's own log (half a group
 *   whose columns are not 48 bytes per cell, half an entry of no kind): `malformed-entry`;
 * - `writeForeignSource(source)`: a well-formed group of another device's source in its own log: `foreign-source`;
 * - `writeForeignLog(replica)`: a well-formed group of its own source in another device's log: `foreign-replica`.
 *
 * @example
 * session.ready({ engine, source, commands: deviceHostileCommands(() => room.doc, source) })
 */
export function deviceHostileCommands(doc: () => Y.Doc, source: string): Record<string, StormCommand> {
  /** Half a group whose one cell counts NaN events, half a clock naming another writer. */
  const malformed = (log: Y.Array<unknown[]>, n: number): void => {
    const nanCell = new Uint8Array(new Float64Array([Number.NaN, 1, 1, 1, 1, 1]).buffer)
    for (let k = 0; k < n; k++) {
      log.push([k % 2 === 0 ? ['g', `tumbling:${STORM_WINDOW_MS}`, 0, source, '["k0"]', nanCell, new Uint8Array(0)] : ['k', source, 'nobody', 1, 2, 3, 1, 1]])
    }
  }
  /** Half a group whose columns are not 48 bytes per cell, half an entry of no kind at all. */
  const misshapen = (log: Y.Array<unknown[]>, n: number): void => {
    for (let k = 0; k < n; k++) log.push([k % 2 === 0 ? ['g', `tumbling:${STORM_WINDOW_MS}`, 0, source, '["k0"]', new Uint8Array(7), new Uint8Array(0)] : ['x', source]])
  }
  return {
    writeMalformed(count) {
      const n = positiveCount('writeMalformed', count)
      const target = doc()
      const meta = target.getMap('tidemark:meta')
      const fake = `hostile-${source}`
      target.transact(() => {
        meta.set(fake, [...meta.values()][0])
        malformed(target.getArray(`tidemark:replica:${fake}`), n)
      })
    },
    writeMalformedOwn(count) {
      const n = positiveCount('writeMalformedOwn', count)
      const target = doc()
      target.transact(() => misshapen(target.getArray(`tidemark:replica:${source}`), n))
    },
    writeForeignSource(other) {
      const target = doc()
      target.getArray(`tidemark:replica:${source}`).push([forgedGroup(name('writeForeignSource', other))])
    },
    writeForeignLog(replica) {
      const target = doc()
      target.getArray(`tidemark:replica:${name('writeForeignLog', replica)}`).push([forgedGroup(source)])
    },
  }
}

/**
 * A dashboard page's hostile command: `writeAsDashboard(room)` opens a connection of its own with
 * the dashboard's token (`connect()`; its follower holds the room on the page's connection),
 * joins a doc to a device room there and, once synced, writes a forged group of the device's
 * source into the device's log: `read-only`. The doc is bound to no engine, so not even this
 * page shows what it forged; `watch` reports the doc's refusal.
 *
 * @example
 * session.ready({ engine, source, commands: dashboardHostileCommands(() => connectRelay({ url, token }), watch) })
 */
export function dashboardHostileCommands(connect: () => Relay, watch: (doc: Y.Doc) => void): Record<string, StormCommand> {
  return {
    async writeAsDashboard(room) {
      const target = name('writeAsDashboard', room)
      const device = target.slice(target.lastIndexOf('/') + 1)
      const doc = new Y.Doc()
      watch(doc)
      connect().join(doc, target)
      // Its content first: the forged entry then lands after the device's own.
      const deadline = Date.now() + 15_000
      while (doc.getArray(`tidemark:replica:${device}`).length === 0) {
        if (Date.now() > deadline) throw new Error(`writeAsDashboard: ${target} showed no content within 15 s`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      doc.getArray(`tidemark:replica:${device}`).push([forgedGroup(device)])
    },
  }
}
