import type { OpenTabChannel } from '@tidemark/yjs'
import { IDBFactory } from 'fake-indexeddb'
import type { ControlChannel, ControlMessage } from '../src/fleet/controlChannel.ts'
import type { FleetWiring, LinkTransports } from '../src/fleet/fleetWiring.ts'

/**
 * The pages and workers of one simulated browser, in memory: tab channels (what
 * `BroadcastChannel` would carry between `BroadcastChannelProvider`s), the control channel, and
 * one IndexedDB.
 * Nothing is delivered until `flush()`, which delivers in posting order until quiet, so a
 * test decides exactly when messages move.
 */
export function memoryPages(namespace = 'test') {
  const queue: (() => void)[] = []
  const tabMembers = new Map<string, Set<(frame: Uint8Array) => void>>()
  const controlMembers = new Set<(message: ControlMessage) => void>()
  let frames = 0

  const openChannel: OpenTabChannel = (name, receive) => {
    let members = tabMembers.get(name)
    if (members === undefined) {
      members = new Set()
      tabMembers.set(name, members)
    }
    const group = members
    group.add(receive)
    return {
      post(frame) {
        frames++
        for (const member of group) if (member !== receive) queue.push(() => group.has(member) && member(frame))
      },
      close: () => group.delete(receive),
    }
  }

  const openControl = (): ControlChannel => {
    const listeners = new Set<(message: ControlMessage) => void>()
    const receive = (message: ControlMessage): void => {
      for (const listener of listeners) listener(message)
    }
    controlMembers.add(receive)
    return {
      post(message) {
        // Structured clone, as BroadcastChannel does: no page shares objects with another.
        const copy = structuredClone(message)
        for (const member of controlMembers) if (member !== receive) queue.push(() => controlMembers.has(member) && member(copy))
      },
      listen(listener) {
        listeners.add(listener)
        return () => listeners.delete(listener)
      },
      close: () => controlMembers.delete(receive),
    }
  }

  const wiring: FleetWiring = { relay: null, relayNotice: null, namespace, fleet: 'f1' }
  const transports: LinkTransports = { openChannel }

  return {
    wiring,
    /** What the hosts' links use: these tab channels. */
    transports,
    /** The browser's IndexedDB, where the hosts' logs live. */
    indexedDB: new IDBFactory(),
    openControl,
    /** Delivers everything posted, and everything that posts in turn, until nothing is left. */
    flush(): number {
      let delivered = 0
      while (queue.length > 0) {
        ;(queue.shift() as () => void)()
        delivered++
        if (delivered > 1_000_000) throw new Error('memoryPages: messages never settle')
      }
      return delivered
    },
    /**
     * Lets IndexedDB commits land (fake-indexeddb works in event-loop turns) while delivering
     * messages, until `busy()` is false: engines hand their writes to the documents only once
     * they are durable, so a test that ticks must also let the log commit.
     */
    async settle(busy: () => boolean): Promise<void> {
      for (let turn = 0; turn < 10_000; turn++) {
        await new Promise((resolve) => setImmediate(resolve))
        this.flush()
        if (busy()) continue
        // The held writes are released when the commit resolves: one more turn delivers them.
        await new Promise((resolve) => setImmediate(resolve))
        this.flush()
        return
      }
      throw new Error('memoryPages: IndexedDB never settled')
    },
    /** Tab-channel frames posted so far. */
    frames: () => frames,
  }
}

/** Yields to the event loop (fake-indexeddb commits there) until `done()` holds; fails after `turns` turns. */
export async function until(done: () => boolean, what: string, turns = 5_000): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (done()) return
    await new Promise((resolve) => setImmediate(resolve))
  }
  throw new Error(`never happened: ${what}`)
}
