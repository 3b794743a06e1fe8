import { describe, expect, it } from 'vitest'
import { parseStormQuery, stormPageUrl } from '../src/contract/stormQuery.ts'

describe('stormPageUrl / parseStormQuery', () => {
  it('round-trips the query and keeps the page’s own parameters', () => {
    const url = stormPageUrl('http://127.0.0.1:4183/storm.html?shell=1', { role: 'device', server: 'ws://127.0.0.1:4001/a b', room: 'storm 7', seed: 7 })
    const parsed = new URL(url)
    expect(parsed.searchParams.get('shell')).toBe('1')
    expect(parseStormQuery(parsed.search)).toEqual({ role: 'device', server: 'ws://127.0.0.1:4001/a b', room: 'storm 7', seed: 7 })
  })

  it('names every missing or malformed parameter', () => {
    expect(() => parseStormQuery('?role=boss&seed=x')).toThrow(
      'storm page query "?role=boss&seed=x": role must be device or dashboard, got "boss"; server (the sync URL) is missing; room is missing; seed must be an integer, got "x"',
    )
  })
})
