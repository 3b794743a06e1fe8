/**
 * What a relay remembers of the presence holders other relays announce (`RoomPresence`): an id
 * is held until its relay lets it go, whatever happens to the presence; one writer cannot crowd
 * the others out of the record.
 */
import { Document } from '@hocuspocus/server'
import { expect, it } from 'vitest'
import { SourceGrant } from '../src/auth/accessGrant.ts'
import { ConnectionGate } from '../src/gate/connectionGate.ts'
import { RoomPresence } from '../src/gate/roomPresence.ts'

const ROOM = 'fleet-h/shared'

function gateOf(replica: string): ConnectionGate {
  const grant = { subject: replica, role: 'device' as const, rooms: [ROOM], replicas: new Set([replica]), sources: new SourceGrant([`${replica}-temp`]), expiresAt: Number.MAX_SAFE_INTEGER }
  return new ConnectionGate(grant, { kind: 'device', fleet: 'fleet-h' }, ROOM, { perSecond: 100, burst: 1000 }, Date.now)
}

it('an id another relay holds stays held until that relay lets it go: not freed by a removal of its presence, nor by another relay', () => {
  const document = new Document(ROOM)
  const presence = new RoomPresence()
  const victim = gateOf('d9')
  const attacker = gateOf('d1')
  presence.heldRemotely(document, 'relay-a', [42], ['d9'])
  // Not shown here (removed, or not arrived): still the victim's.
  expect(document.awareness.states.has(42)).toBe(false)
  expect(presence.heldByAnother(document, attacker, 42)).toBe(true)
  expect(presence.heldByAnother(document, victim, 42)).toBe(false)
  expect(presence.take(document, attacker, [{ client: 42, clock: 5, present: true }])).toEqual({ client: 42, roomFull: false })
  // Another relay cannot let it go; its own can.
  presence.releasedRemotely(document, 'relay-c', [42])
  expect(presence.heldByAnother(document, attacker, 42)).toBe(true)
  presence.releasedRemotely(document, 'relay-a', [42])
  expect(presence.heldByAnother(document, attacker, 42)).toBe(false)
  expect(presence.take(document, attacker, [{ client: 42, clock: 5, present: true }])).toBeNull()
})

it('one writer is remembered holding at most 64 ids per room: a writer that claims thousands does not push out the next one', () => {
  const document = new Document(ROOM)
  const presence = new RoomPresence()
  const reader = gateOf('d5')
  for (let c = 0; c < 512; c++) presence.heldRemotely(document, 'relay-a', Array.from({ length: 8 }, (_, i) => 10_000 + c * 8 + i), ['d1'])
  const remembered = Array.from({ length: 4096 }, (_, i) => 10_000 + i).filter((client) => presence.heldByAnother(document, reader, client))
  expect(remembered).toHaveLength(64)
  presence.heldRemotely(document, 'relay-a', [77], ['d9'])
  expect(presence.heldByAnother(document, reader, 77)).toBe(true)
  // The same writer's id announced again (after a move) is still its own.
  presence.heldRemotely(document, 'relay-b', [77], ['d9'])
  expect(presence.heldByAnother(document, gateOf('d9'), 77)).toBe(false)
})

it('writers that fill the record together push out only each other: a writer holding fewer is recorded, and kept, even with its presence removed', () => {
  const document = new Document(ROOM)
  const presence = new RoomPresence()
  const reader = gateOf('d5')
  const victim = gateOf('d9')
  // The victim's id, its presence not shown here (removed by anyone one clock on, or not arrived).
  presence.heldRemotely(document, 'relay-a', [7], ['d9'])
  // 64 colluding writers, 64 ids each: the 4,096-entry record is full.
  for (let w = 0; w < 64; w++) presence.heldRemotely(document, 'relay-a', Array.from({ length: 64 }, (_, i) => 100_000 + w * 64 + i), [`c${w}`])
  const colluders = () => Array.from({ length: 4096 }, (_, i) => 100_000 + i).filter((client) => presence.heldByAnother(document, reader, client)).length
  expect(presence.heldByAnother(document, reader, 7)).toBe(true)
  expect(colluders()).toBe(4095)
  // A newcomer's id is recorded, in place of a colluder's; the victim's stays.
  presence.heldRemotely(document, 'relay-b', [8], ['d8'])
  expect(presence.heldByAnother(document, reader, 8)).toBe(true)
  expect(presence.heldByAnother(document, reader, 7)).toBe(true)
  expect(presence.heldByAnother(document, victim, 7)).toBe(false)
  expect(colluders()).toBe(4094)
  // A colluder claiming more pushes out only colluders' ids: none holds fewer than it would.
  presence.heldRemotely(document, 'relay-a', [200_000, 200_001], ['c0'])
  expect(presence.heldByAnother(document, reader, 7)).toBe(true)
  expect(presence.heldByAnother(document, reader, 8)).toBe(true)
})
