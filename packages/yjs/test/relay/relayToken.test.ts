/**
 * A token read belongs to one socket and is bounded in time: a token function whose promise
 * never settles neither blocks the next socket's authentication nor holds a socket forever.
 * Time is the injected fake clock of `jitter.setTimeout`.
 */
import { seededRandom } from '@tidemark/seeded-random'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { device, FakeTimers, relayClient, statusOf, until, untilStatus } from './harness.ts'
import { signToken, startTestRelay, type TestRelay } from './testRelay.ts'

let server: TestRelay
beforeEach(async () => {
  server = await startTestRelay()
})
afterEach(async () => {
  await server.stop()
})

const untilTimer = (timers: FakeTimers, what: string, check: (delays: number[]) => boolean): Promise<void> => until(what, () => check(timers.delays()), (notify) => timers.subscribe(notify))
const tokensSent = (): number => server.received.filter((m) => m.token !== null).length

describe('relay client: token reads', () => {
  it('gives up a token read whose socket closed: the next socket reads the token again and authenticates', async () => {
    const token = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/d01'] })
    let reads = 0
    const timers = new FakeTimers()
    // The first read hangs (a stalled fetch), later ones answer.
    const { relay, errors } = relayClient(server.url, () => (++reads === 1 ? new Promise<string>(() => {}) : Promise.resolve(token)), {
      jitter: { random: seededRandom(1), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout },
    })
    const { doc } = device(relay, 'fleet-a/d01', 'd01')
    await untilTimer(timers, 'the token read bounded', (delays) => delays.includes(10_000))
    expect(statusOf(doc).state).toBe('connecting')
    server.dropSockets()
    await untilStatus(doc, 'offline', (s) => s.state === 'offline')
    // The hanging read's timer went with its socket: only the reconnect waits.
    expect(timers.delays()).toHaveLength(1)
    expect(timers.delays()[0]).toBeLessThan(500)
    timers.runAll()
    await untilStatus(doc, 'in sync on the new socket', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    expect([reads, tokensSent()]).toEqual([2, 1])
    expect(timers.delays()).toEqual([])
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('gives up a token read after tokenTimeoutMs, reports it and reconnects with a new read', async () => {
    const token = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/d01'] })
    let reads = 0
    let late: (token: string) => void = () => {}
    const timers = new FakeTimers()
    const { relay, errors } = relayClient(server.url, () => (++reads === 1 ? new Promise<string>((resolve) => (late = resolve)) : Promise.resolve(token)), {
      tokenTimeoutMs: 3_000,
      jitter: { random: seededRandom(2), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout },
    })
    const { doc } = device(relay, 'fleet-a/d01', 'd01')
    await untilTimer(timers, 'the token read bounded', (delays) => delays.includes(3_000))
    timers.runUpTo(2_999)
    expect([errors, statusOf(doc).state]).toEqual([[], 'connecting'])
    timers.runUpTo(3_000)
    expect(errors.map((error) => error.message)).toEqual([`relay ${server.url}: the token function did not answer within 3000 ms; reconnecting`])
    // Dropped at once; the reconnect after a jittered delay reads the token again.
    expect(timers.delays()).toHaveLength(1)
    expect(timers.delays()[0]).toBeLessThan(500)
    timers.runAll()
    await untilStatus(doc, 'in sync on the new socket', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    expect([reads, tokensSent()]).toEqual([2, 1])
    // The given-up read answering late changes nothing.
    late(token)
    await Promise.resolve()
    expect([tokensSent(), errors.length, statusOf(doc).state]).toEqual([1, 1, 'connected'])
    relay.destroy()
  })

  it('reports a token read given up that fails later, without reconnecting again', async () => {
    const token = await signToken({ sub: 'd01', role: 'device', rooms: ['fleet-a/d01'] })
    let reads = 0
    let fail: (error: Error) => void = () => {}
    const timers = new FakeTimers()
    const errors: Error[] = []
    let reported: () => void = () => {}
    const { relay } = relayClient(server.url, () => (++reads === 1 ? new Promise<string>((_, reject) => (fail = reject)) : Promise.resolve(token)), {
      onError: (error) => {
        errors.push(error)
        reported()
      },
      jitter: { random: seededRandom(3), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout },
    })
    const { doc } = device(relay, 'fleet-a/d01', 'd01')
    await untilTimer(timers, 'the token read bounded', (delays) => delays.includes(10_000))
    server.dropSockets()
    await untilStatus(doc, 'offline', (s) => s.state === 'offline')
    timers.runAll()
    await untilStatus(doc, 'in sync on the new socket', (s) => s.state === 'connected')
    expect(errors).toEqual([])
    fail(new Error('login server down'))
    await until('the late failure reported', () => errors.length > 0, (notify) => {
      reported = notify
      return () => {
        reported = () => {}
      }
    })
    expect(errors.map((error) => error.message)).toEqual([`relay ${server.url}: the token function failed (Error: login server down) after its read was given up`])
    expect([statusOf(doc).state, timers.delays()]).toEqual(['connected', []])
    relay.destroy()
  })
})
