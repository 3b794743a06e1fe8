/**
 * What the storm page does when the driver asks it to act as a hostile peer: write malformed
 * entries into the shared document, or post frames that are not Yjs to the other tabs.
 */
import type { StormCommand } from '@tidemark/storm/page'
import type * as Y from 'yjs'

function positiveCount(command: string, count: unknown): number {
  if (typeof count !== 'number' || !Number.isSafeInteger(count) || count <= 0) throw new RangeError(`${command}: count must be a positive integer, got ${String(count)}`)
  return count
}

/**
 * The page's hostile commands (`StormApp.commands`):
 *
 * - `writeMalformed(count)` registers a fake replica under this page's configuration (so it is
 *   judged entry by entry rather than refused whole) and writes `count` malformed entries into
 *   its log: half a well-formed group whose one cell counts NaN events, half a clock naming
 *   another writer;
 * - `writeGarbageFrames(count)` posts `count` undecodable frames on the tab channel `channel`:
 *   half a frame kind that does not exist, half a sync update that is not Yjs.
 *
 * @example
 * session.ready({ engine, source, commands: hostileCommands(doc, source, `tidemark:storm:${room}`) })
 */
export function hostileCommands(doc: Y.Doc, source: string, channel: string): Record<string, StormCommand> {
  return {
    writeMalformed(count) {
      const n = positiveCount('writeMalformed', count)
      const meta = doc.getMap('tidemark:meta')
      const fake = `hostile-${source}`
      doc.transact(() => {
        meta.set(fake, [...meta.values()][0])
        const log = doc.getArray(`tidemark:replica:${fake}`)
        const nanCell = new Uint8Array(new Float64Array([Number.NaN, 1, 1, 1, 1, 1]).buffer)
        for (let k = 0; k < n; k++) {
          log.push([k % 2 === 0 ? ['g', 'tumbling:1000', 0, 'x', '["k0"]', nanCell] : ['k', 'nobody', 'x', 1, 2, 3, 9, 1]])
        }
      })
    },
    writeGarbageFrames(count) {
      const n = positiveCount('writeGarbageFrames', count)
      const tabs = new BroadcastChannel(channel)
      // Kind 9 (no such kind); kind 0 (sync) from peer 77 to everyone, an update (2) of 5 bytes that do not decode.
      for (let k = 0; k < n; k++) tabs.postMessage(new Uint8Array(k % 2 === 0 ? [9, 77, 0] : [0, 77, 0, 2, 5, 1, 2, 3, 4, 5]))
      tabs.close()
    },
  }
}
