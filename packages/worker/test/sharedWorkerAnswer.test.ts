/**
 * A SharedWorker made while the previous one of its URL is closing is that one (Chromium), and
 * nothing answers there any more: the page makes the SharedWorker again when its hello gets no
 * answer in time. A host that is alive but not ready (waiting for the log) answers at once, so
 * the page waits for it.
 */
import { type EngineOptions, tumbling } from '@tidemark/engine'
import { describe, expect, it } from 'vitest'
import type { ClientLink } from '../src/host/hostClient.ts'
import { connectEngineWith } from '../src/page/connectEngine.ts'
import { HELLO_ANSWER_MS } from '../src/page/sharedConnector.ts'
import { type TestHost, World } from './hostHarness.ts'
import { sharedWorkerOf, workerOf } from './inProcessWorkers.ts'

const engine: EngineOptions = { windows: tumbling(1_000) }

/** A SharedWorker whose host hears the page but whose answers never reach it: a closing worker's port. */
function deafSharedWorker(host: TestHost): SharedWorker {
  const own: ClientLink = { send: () => undefined }
  const port = {
    postMessage(message: unknown) {
      const copy = structuredClone(message)
      setImmediate(() => host.host.receive(own, copy))
    },
    addEventListener() {},
    start() {},
    close() {},
  }
  return { port, addEventListener() {} } as unknown as SharedWorker
}

describe('shared mode: the first answer to a hello', () => {
  it('a page whose SharedWorker does not answer makes it again after HELLO_ANSWER_MS, and the host keeps one client for the tab', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine, log: false })
    let made = 0
    const connecting = connectEngineWith(
      { name: 'fleet', mode: 'shared', shared: () => (++made === 1 ? deafSharedWorker(host) : sharedWorkerOf(host)), dedicated: () => workerOf(host) },
      { locks: world.locks.as('tab-1'), sharedWorkers: true, clock: world.time.clock('tab-1'), lifecycle: null },
    )
    await world.run(HELLO_ANSWER_MS - 100)
    // The host welcomed the first port's page, which never heard it.
    expect([made, host.host.clients]).toEqual([1, 1])
    await world.run(200)
    const remote = await connecting
    expect(made).toBe(2)
    expect(remote.connection()).toMatchObject({ mode: 'shared', state: 'connected' })
    // The hello through the second port replaced the first port's client: one page, one client.
    expect(host.host.clients).toBe(1)
    const receipt = remote.ingest([{ id: 'd1#1', source: 'd1', seq: 1, ts: 10, key: 'temp', value: 4 }])
    await world.run()
    expect((await receipt).accepted).toBe(1)
  })

  it('a host waiting for the log says so at once: the page waits for its welcome, making no other SharedWorker', async () => {
    const world = new World()
    const first = world.host({ name: 'fleet', engine })
    await world.run()
    // The first holds the log until it stops: the second waits for it.
    const second = world.host({ name: 'fleet', engine })
    let made = 0
    const connecting = connectEngineWith(
      {
        name: 'fleet',
        mode: 'shared',
        shared: () => {
          made++
          return sharedWorkerOf(second)
        },
        dedicated: () => workerOf(second),
      },
      { locks: world.locks.as('tab-1'), sharedWorkers: true, clock: world.time.clock('tab-1'), lifecycle: null },
    )
    let connected = false
    void connecting.then(() => {
      connected = true
    })
    await world.run(3 * HELLO_ANSWER_MS)
    expect([made, connected, second.host.clients]).toEqual([1, false, 0])
    await first.host.stop()
    await world.run()
    const remote = await connecting
    expect(remote.connection()).toMatchObject({ mode: 'shared', state: 'connected' })
    expect([made, second.host.clients]).toEqual([1, 1])
  })
})
