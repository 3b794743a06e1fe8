import { describe, expect, it } from 'vitest'
import { parseStormQuery, stormPageUrl } from '../src/contract/stormQuery.ts'

describe('stormPageUrl / parseStormQuery', () => {
  it('round-trips the query and keeps the page’s own parameters', () => {
    const url = stormPageUrl('http://127.0.0.1:4183/storm.html?shell=1', { role: 'device', server: 'ws://127.0.0.1:4001/a b', room: 'storm 7', seed: 7 })
    const parsed = new URL(url)
    expect(parsed.searchParams.get('shell')).toBe('1')
    expect(parseStormQuery(parsed.search)).toEqual({ role: 'device', server: 'ws://127.0.0.1:4001/a b', room: 'storm 7', seed: 7 })
  })

  it('adds the page’s own parameters, and refuses one that would replace a storm parameter', () => {
    const query = { role: 'dashboard', server: 'ws://127.0.0.1:4001', room: 'storm-7', seed: 107 } as const
    const url = new URL(stormPageUrl('http://127.0.0.1:4183/storm.html', query, { token: 'a.b.c', source: 'dev-1' }))
    expect(url.searchParams.get('token')).toBe('a.b.c')
    expect(url.searchParams.get('source')).toBe('dev-1')
    expect(parseStormQuery(url.search)).toEqual(query)
    expect(() => stormPageUrl('http://127.0.0.1:4183/storm.html', query, { room: 'other' })).toThrow(
      'stormPageUrl: the page parameter "room" is the storm\'s own (role, server, room, seed)',
    )
  })

  it('names every missing or malformed parameter', () => {
    expect(() => parseStormQuery('?role=boss&seed=x')).toThrow(
      'storm page query "?role=boss&seed=x": role must be device or dashboard, got "boss"; server (the sync URL) is missing; room is missing; seed must be an integer, got "x"',
    )
  })
})
