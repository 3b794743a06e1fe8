/**
 * Store write marks as one relay receives them from the others: a mark releases or labels the
 * changes it holds; anything else on the marks' channel (another program's message, a relay of
 * another version) is refused with a reason in the log, and changes nothing held.
 */
import { expect, it } from 'vitest'
import { RelayMetrics } from '../src/metrics/relayMetrics.ts'
import { STORED_CHANNEL, StoredMarks } from '../src/scaleout/storedMarks.ts'
import { RelayedUpdates } from '../src/store/relayedUpdates.ts'
import { ManualTimers } from './support/guardedSockets.ts'

const OTHER = 'tidemark-relay-7-other'
const DATABASE = 'fleet-db'

/** A message as the other relay frames it: its identifier, then the bytes after it. */
function framed(sender: string, rest: Buffer): Buffer {
  const identifier = Buffer.from(sender)
  return Buffer.concat([Buffer.of(identifier.byteLength), identifier, rest])
}

function mark(text: string, sender = OTHER): Buffer {
  return framed(sender, Buffer.concat([Buffer.of(0), Buffer.from(text)]))
}

function receiving(): { receive: (message: Buffer) => void; refusals: string[]; relayed: RelayedUpdates; written: Uint8Array[] } {
  const timers = new ManualTimers()
  const written: Uint8Array[] = []
  const relayed = new RelayedUpdates({ append: (_room, update) => written.push(update) }, { holdMs: 5_000, now: () => timers.now, timers, metrics: new RelayMetrics() })
  let listener: ((channel: Buffer, message: Buffer) => void) | undefined
  const wire = {
    sub: {
      subscribe: async () => 1,
      on: (_event: 'messageBuffer', handle: (channel: Buffer, message: Buffer) => void) => {
        listener = handle
      },
    },
    encodeMessage: (message: Uint8Array) => framed('tidemark-relay-1-self', Buffer.from(message)),
  }
  const refusals: string[] = []
  new StoredMarks(
    wire,
    { identifier: 'tidemark-relay-1-self', database: DATABASE },
    relayed,
    () => undefined,
    () => undefined,
    (why) => refusals.push(why),
  )
  return { receive: (message) => listener?.(Buffer.from(STORED_CHANNEL), message), refusals, relayed, written }
}

it('a stored mark from the same database releases the changes its write covered', () => {
  const { receive, refusals, relayed } = receiving()
  relayed.hold('fleet-a/d1', Uint8Array.of(1, 2, 3), OTHER)
  receive(mark(JSON.stringify({ t: 'begin', k: 1, d: DATABASE })))
  receive(mark(JSON.stringify({ t: 'stored', k: 1, d: DATABASE })))
  expect(relayed.bytes).toBe(0)
  expect(refusals).toEqual([])
})

it.each([
  ['not JSON', mark('{"t":"stored"'), 'not JSON'],
  ['JSON that is not an object', mark('42'), 'not an object'],
  ['an unknown kind of mark', mark(JSON.stringify({ t: 'flushed', k: 1, d: DATABASE })), "t must be 'begin' or 'stored'"],
  ['a write number that is not a safe integer', mark(JSON.stringify({ t: 'stored', k: 1.5, d: DATABASE })), 'k must be a safe integer'],
  ['no database name', mark(JSON.stringify({ t: 'stored', k: 1 })), 'd must be a database name'],
  ['no empty room name before the mark', framed(OTHER, Buffer.from(JSON.stringify({ t: 'stored', k: 1, d: DATABASE }))), 'no empty room name before it'],
])('%s is refused with its reason and releases nothing', (_name, message, reason) => {
  const { receive, refusals, relayed, written } = receiving()
  relayed.hold('fleet-a/d1', Uint8Array.of(1, 2, 3), OTHER)
  receive(mark(JSON.stringify({ t: 'begin', k: 1, d: DATABASE })))
  receive(message)
  expect(refusals).toEqual([`a store write mark from '${OTHER}' was refused: ${reason}`])
  expect(relayed.bytes).toBe(3)
  expect(written).toEqual([])
})

it("this relay's own marks, which Redis sends it back, are neither refused nor applied", () => {
  const { receive, refusals, relayed } = receiving()
  relayed.hold('fleet-a/d1', Uint8Array.of(1), OTHER)
  receive(mark('not a mark at all', 'tidemark-relay-1-self'))
  expect(refusals).toEqual([])
  expect(relayed.bytes).toBe(1)
})
