import { cleanup } from '@testing-library/react'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { useSyncStatus } from '../src/useSyncStatus.ts'
import { MINUTE } from './windowIds.ts'
import { Lag, LateLane, renders, resetProbes, Stats, SyncBadge, setup, text, Watermark } from './probes.tsx'

let syncLineRenders = 0
/** The getting-started dashboard's status line: an inline selector returning a new object on every call. */
function SyncLine() {
  syncLineRenders++
  const { state, refused } = useSyncStatus((status) => ({ state: status.refusal ?? status.state, refused: status.refusal !== null }))
  return <output data-testid="sync-line">{`${state}${refused ? ' (refused)' : ''}`}</output>
}

beforeEach(() => {
  resetProbes()
  syncLineRenders = 0
})
afterEach(cleanup)

describe('useLateEvents', () => {
  it('shows the late lane after the frame and ignores frames that left it alone', () => {
    const { engine, frame } = setup(<LateLane />)
    engine.addLate({ id: 'e1', source: 'd1', ts: 5, value: 1 }, MINUTE)
    expect(text('late')).toBe('')
    frame()
    expect(text('late')).toBe('e1:beyond_lateness')
    expect(renders('late')).toBe(2)

    engine.emit(MINUTE, 'temp', 0, 1)
    frame()
    expect(renders('late')).toBe(2)

    // The fake pushes onto the array it returned before.
    engine.addLate({ id: 'e2', source: 'd1', ts: 6, value: 1 }, MINUTE)
    frame()
    expect(text('late')).toBe('e1:beyond_lateness e2:beyond_lateness')
  })
})

describe('useEngineStats', () => {
  it('renders when a counter changed, and a selector renders only for its own counter', () => {
    const { engine, frame } = setup(
      <>
        <Stats />
        <Lag />
      </>,
    )
    engine.setStats({ ingested: 10 })
    engine.setStats({ ingested: 20 })
    frame()
    expect(text('ingested')).toBe('20')
    expect(renders('stats')).toBe(2)
    expect(renders('lag')).toBe(1)

    engine.setStats({ watermarkLag: 300 })
    frame()
    expect(text('lag')).toBe('300')
    expect(renders('lag')).toBe(2)

    engine.setStats({}) // a new but equal stats object
    frame()
    expect(renders('stats')).toBe(3)
    engine.setStats({ anomalies: { ...engine.stats().anomalies } }) // an equal nested record
    frame()
    expect(renders('stats')).toBe(3)
  })
})

describe('useSyncStatus and useWatermark', () => {
  it('show connection changes and the watermark, and skip equal values', () => {
    const { engine, frame } = setup(
      <>
        <SyncBadge />
        <Watermark />
      </>,
    )
    expect(text('sync')).toBe('local 0')

    engine.setSync({ state: 'connecting' })
    engine.setSync({ state: 'connected', peers: 2 })
    frame()
    expect(text('sync')).toBe('connected 2')
    expect(renders('sync')).toBe(2)
    expect(renders('watermark')).toBe(1)

    engine.setSync({}) // a new object, the same status
    engine.setWatermark(60_000)
    frame()
    expect(renders('sync')).toBe(2)
    expect(text('watermark')).toBe('60000')

    engine.setSync({ state: 'offline', peers: 0, refusal: 'tidemark:token-expired' })
    frame()
    expect(text('sync')).toBe('offline 0 refused: tidemark:token-expired')
  })
})

describe('useSyncStatus with a selector', () => {
  it('renders only when the selection changes, compared shallowly', () => {
    const { engine, frame } = setup(<SyncLine />)
    expect([text('sync-line'), syncLineRenders]).toEqual(['local', 1])
    engine.setSync({ state: 'connected' })
    frame()
    expect([text('sync-line'), syncLineRenders]).toEqual(['connected', 2])
    // Peers, pending updates and the last sync are outside the selection: no render.
    engine.setSync({ peers: 3, pendingLocalUpdates: 7, lastSync: 1_000 })
    frame()
    expect(syncLineRenders).toBe(2)
    engine.setSync({ state: 'offline', refusal: 'tidemark:bad-signature' })
    frame()
    expect([text('sync-line'), syncLineRenders]).toEqual(['tidemark:bad-signature (refused)', 3])
  })
})
