/**
 * What a relay answers when another that just loaded a room asks who holds which presence
 * (`SharedPresence`): its presence answer shows other relays' presences too, so it passes on the
 * holders it knows, on the connection that carries that answer. The holder's own answer travels
 * on another connection and may arrive later. Redis is a hand-driven bus here, so the test
 * chooses which relay's messages arrive and when.
 */
import { Document } from '@hocuspocus/server'
import { expect, it } from 'vitest'
import { SourceGrant } from '../src/auth/accessGrant.ts'
import { ConnectionGate } from '../src/gate/connectionGate.ts'
import { RoomPresence } from '../src/gate/roomPresence.ts'
import { PRESENCE_CHANNEL, type PresenceWire, SharedPresence } from '../src/scaleout/sharedPresence.ts'

const ROOM = 'fleet-h/shared'

function gateOf(replica: string): ConnectionGate {
  const grant = { subject: replica, role: 'device' as const, rooms: [ROOM], replicas: new Set([replica]), sources: new SourceGrant([`${replica}-temp`]), expiresAt: Number.MAX_SAFE_INTEGER }
  return new ConnectionGate(grant, { kind: 'device', fleet: 'fleet-h' }, ROOM, { perSecond: 100, burst: 1000 }, Date.now)
}

/** One relay's side: its presence, its room, and what it published and has not been delivered yet. */
interface Relay {
  readonly name: string
  readonly presence: RoomPresence
  readonly document: Document
  readonly shared: SharedPresence
  readonly outbox: Buffer[]
  deliver(message: Buffer): void
}

function relay(name: string): Relay {
  const outbox: Buffer[] = []
  let listener: ((channel: Buffer, message: Buffer) => void) | undefined
  const wire: PresenceWire = {
    pub: {
      publish: async (channel, message) => {
        expect(channel).toBe(PRESENCE_CHANNEL)
        outbox.push(message)
        return 1
      },
    },
    sub: {
      subscribe: async () => undefined,
      on: (_event, on) => {
        listener = on
      },
    },
    // The extension's framing: the identifier's length, the identifier, the message.
    encodeMessage: (message) => Buffer.concat([Buffer.of(name.length), Buffer.from(name), message]),
  }
  const presence = new RoomPresence()
  const document = new Document(ROOM)
  const failures: unknown[] = []
  const shared = new SharedPresence(wire, name, presence, (work) => void work().catch((error: unknown) => failures.push(error)))
  shared.loaded(document)
  return {
    name,
    presence,
    document,
    shared,
    outbox,
    deliver: (message) => {
      listener?.(Buffer.from(PRESENCE_CHANNEL), message)
      expect(failures).toEqual([])
    },
  }
}

/** Delivers what `from` published so far to each of `to`, in order. */
function flush(from: Relay, ...to: Relay[]): void {
  const messages = from.outbox.splice(0)
  for (const message of messages) for (const r of to) r.deliver(message)
}

it("a relay answering another's question passes on the holders it knows elsewhere, ahead of its presence answer: a squat on the new relay is refused before the holder's own answer arrives", () => {
  const [a, b, c] = [relay('relay-a'), relay('relay-b'), relay('relay-c')]
  const victim = gateOf('d9')
  const attacker = gateOf('d1')
  // The victim shows presence through relay A; relay C learns who holds it.
  expect(a.presence.take(a.document, victim, [{ client: 42, clock: 1, present: true }])).toBeNull()
  flush(a, c)
  // Relay B loads the room and asks; C's answer arrives, A's not yet.
  b.shared.announce(b.document, true)
  flush(b, a, c)
  flush(c, b)
  expect(b.presence.heldByAnother(b.document, attacker, 42)).toBe(true)
  expect(b.presence.take(b.document, attacker, [{ client: 42, clock: 1, present: true }])).toEqual({ client: 42, roomFull: false })
  expect(b.presence.heldByAnother(b.document, gateOf('d9'), 42)).toBe(false)
  // What C passed on is relay A's: A letting it go frees it.
  a.outbox.length = 0
  a.presence.release(a.document, victim)
  flush(a, b)
  expect(b.presence.heldByAnother(b.document, attacker, 42)).toBe(false)
  expect(b.presence.take(b.document, attacker, [{ client: 42, clock: 1, present: true }])).toBeNull()
})

it('a holder passed on that is the receiving relay\'s own is ignored, and a loading relay passes nothing on', () => {
  const [a, c] = [relay('relay-a'), relay('relay-c')]
  const mine = gateOf('d9')
  expect(a.presence.take(a.document, mine, [{ client: 7, clock: 1, present: true }])).toBeNull()
  flush(a, c)
  expect(c.presence.heldElsewhere(c.document)).toEqual([{ relay: 'relay-a', clients: [7], replicas: ['d9'] }])
  // C answers A's question: A's own holder comes back, which A keeps as its own (not as held elsewhere).
  a.shared.announce(a.document, true)
  flush(a, c)
  expect(c.outbox.length).toBe(1)
  flush(c, a)
  expect(a.presence.heldElsewhere(a.document)).toEqual([])
  expect(a.presence.heldByAnother(a.document, gateOf('d1'), 7)).toBe(true)
  // Asking, a relay sends what it holds and the question, not what it knows of the others.
  c.shared.announce(c.document, true)
  expect(c.outbox.map((m) => JSON.parse(m.toString('utf8', 2 + 'relay-c'.length)).t)).toEqual(['query'])
})

it('a held message naming its relay with anything but a string is not one', () => {
  const [a, b] = [relay('relay-a'), relay('relay-b')]
  const frame = (body: object) => Buffer.concat([Buffer.of('relay-a'.length), Buffer.from('relay-a'), Buffer.of(0), Buffer.from(JSON.stringify(body))])
  b.deliver(frame({ t: 'held', room: ROOM, clients: [5], replicas: ['d9'], relay: 12 }))
  expect(b.presence.heldElsewhere(b.document)).toEqual([])
  b.deliver(frame({ t: 'held', room: ROOM, clients: [5], replicas: ['d9'], relay: 'relay-c' }))
  expect(b.presence.heldElsewhere(b.document)).toEqual([{ relay: 'relay-c', clients: [5], replicas: ['d9'] }])
  expect(a.outbox).toEqual([])
})
