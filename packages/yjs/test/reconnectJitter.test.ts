import { seededRandom } from '@tidemark/seeded-random'
import { ObservableV2 } from 'lib0/observable'
import { describe, expect, it } from 'vitest'
import { jitterWindow } from '../src/transport/reconnectJitter.ts'
import { jitterReconnects } from '../src/websocket/jitterReconnects.ts'

/**
 * The reconnect arithmetic of y-websocket 3.1's closeWebsocketConnection: emit
 * 'connection-close', count the failure, then wait min(100 · 2^failures, maxBackoffTime).
 */
class FakeWebsocketProvider extends ObservableV2<{
  'connection-close': (event: unknown, provider: unknown) => void
  sync: (synced: boolean) => void
}> {
  maxBackoffTime = 2500
  wsUnsuccessfulReconnects = 0
  shouldConnect = false
  wsconnected = false
  wsconnecting = false
  connects = 0

  connect(): void {
    this.shouldConnect = true
    this.connects++
  }

  /** A close as y-websocket handles it; returns the delay it would wait before reconnecting. */
  close(): number {
    this.emit('connection-close', [null, this])
    this.wsUnsuccessfulReconnects++
    return Math.min(2 ** this.wsUnsuccessfulReconnects * 100, this.maxBackoffTime)
  }

  synced(): void {
    this.wsUnsuccessfulReconnects = 0
    this.emit('sync', [true])
  }
}

describe('jitterReconnects', () => {
  it('spreads reconnect delays uniformly over a window that doubles per failed attempt', () => {
    const delays: number[][] = [[], [], [], [], [], []]
    for (let device = 0; device < 400; device++) {
      const provider = new FakeWebsocketProvider()
      jitterReconnects(provider, { random: seededRandom(device + 1), baseMs: 500, capMs: 8_000 })
      for (let attempt = 0; attempt < 6; attempt++) delays[attempt]?.push(provider.close())
    }
    delays.forEach((sample, attempt) => {
      const window = jitterWindow(attempt, 500, 8_000)
      expect(Math.max(...sample)).toBeLessThan(window)
      expect(Math.min(...sample)).toBeGreaterThanOrEqual(0)
      // no lockstep: delays spread over the window (mean near the middle, many distinct values)
      const mean = sample.reduce((a, b) => a + b, 0) / sample.length
      expect(mean / window).toBeGreaterThan(0.4)
      expect(mean / window).toBeLessThan(0.6)
      expect(new Set(sample).size).toBeGreaterThan(sample.length / 2)
    })
  })

  it('starts over after a successful sync', () => {
    const provider = new FakeWebsocketProvider()
    jitterReconnects(provider, { random: () => 0.999, baseMs: 500, capMs: 60_000 })
    provider.close()
    provider.close()
    expect(provider.close()).toBe(1998)
    provider.synced()
    expect(provider.close()).toBe(499)
  })

  it('leaves a deliberate disconnect alone', () => {
    const provider = new FakeWebsocketProvider()
    jitterReconnects(provider, { random: () => 0.5 })
    provider.shouldConnect = false
    expect(provider.close()).toBe(200)
    expect(provider.maxBackoffTime).toBe(2500)
  })

  it('spreads the first connect over initialMs and cancels it when stopped', () => {
    const timers: { ms: number; run: () => void }[] = []
    const provider = new FakeWebsocketProvider()
    const stop = jitterReconnects(provider, {
      random: () => 0.25,
      initialMs: 4_000,
      setTimeout: (run, ms) => timers.push({ ms, run }),
      clearTimeout: () => timers.splice(0),
    })
    expect(provider.connects).toBe(0)
    expect(timers.map((t) => t.ms)).toEqual([1_000])
    timers[0]?.run()
    expect(provider.connects).toBe(1)

    const other = new FakeWebsocketProvider()
    const timers2: (() => void)[] = []
    const stop2 = jitterReconnects(other, { initialMs: 4_000, setTimeout: (run) => timers2.push(run), clearTimeout: () => timers2.splice(0) })
    stop2()
    expect(timers2).toHaveLength(0)
    expect(other.connects).toBe(0)
    stop()
  })
})
