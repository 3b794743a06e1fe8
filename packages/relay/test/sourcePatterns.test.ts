/**
 * A token's `sources` as prefixes (`d07-*`): a device whose tabs claim new source ids
 * (`claimSource({ prefix: 'd07' })` makes `d07-<random>`) writes them with one token, and
 * nothing outside the prefix.
 */
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { readGrant } from '../src/auth/accessGrant.ts'
import { authorizeUpdate, SourceGrant } from '../src/index.ts'
import { clockEntry, groupEntry, replicaLog } from './support/roomClients.ts'

const EXP = 1_900_000_000

/** What a grant read from `sources` says of a device writing `source`'s group and clock into its own log. */
function verdict(sources: readonly string[], source: string): string {
  const grant = readGrant({ sub: 'd07', role: 'device', rooms: ['fleet-a/d07'], replicas: ['d07'], sources, exp: EXP })
  if (typeof grant === 'string') throw new Error(grant)
  const server = new Y.Doc()
  const device = new Y.Doc()
  const updates: Uint8Array[] = []
  device.on('update', (update: Uint8Array) => updates.push(update))
  device.transact(() => {
    device.getMap('tidemark:meta').set('d07', [2, 'cfg'])
    replicaLog(device, 'd07').push([groupEntry(source, 0), clockEntry(source, 'd07', 1)])
  })
  const checked = authorizeUpdate(server, Y.mergeUpdates(updates), grant)
  if (checked.ok) return 'accepted'
  return checked.missing ? `missing ${checked.detail}` : checked.refusal.text
}

describe('sources named by a prefix in the token', () => {
  it('admit every source that starts with the prefix, and no other', () => {
    expect(verdict(['d07-*'], 'd07-k2j9x0')).toBe('accepted')
    expect(verdict(['d07-*'], 'd07-')).toBe('accepted')
    expect(verdict(['d07-*'], 'd08-k2j9x0')).toBe('foreign-source d08-k2j9x0')
    expect(verdict(['d07-*'], 'd07')).toBe('foreign-source d07')
    // Exact names are still exact.
    expect(verdict(['d07-temp'], 'd07-temp')).toBe('accepted')
    expect(verdict(['d07-temp'], 'd07-temp2')).toBe('foreign-source d07-temp2')
    expect(verdict(['d07-temp', 'd07-tab-*'], 'd07-tab-1')).toBe('accepted')
  })

  it('refuse a token whose pattern has no prefix or a "*" before its end', () => {
    const claims = { sub: 'd07', role: 'device', rooms: ['fleet-a/d07'], replicas: ['d07'], exp: EXP }
    expect(readGrant({ ...claims, sources: ['*'] })).toBe('sources: a pattern needs a prefix before "*"')
    expect(readGrant({ ...claims, sources: ['d*7'] })).toBe('sources: "*" may only end a pattern, in "d*7"')
    expect(readGrant({ ...claims, sources: ['d07-**'] })).toBe('sources: "*" may only end a pattern, in "d07-**"')
  })

  it('SourceGrant answers as a set of names and prefixes', () => {
    const sources = new SourceGrant(['d07-temp', 'd07-tab-*'])
    expect(['d07-temp', 'd07-tab-k2', 'd07-tab-', 'd07-tab', 'd07-hum'].map((source) => sources.has(source))).toEqual([true, true, true, false, false])
  })
})
