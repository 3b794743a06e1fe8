import { describe, expect, it } from 'vitest'
import { tumbling } from '@tidemark/engine'
import { checkHostOptions, type HostEngineOptions } from '../src/host/hostOptions.ts'
import { type ConnectEngineOptions, connectEngine, connectEngineWith } from '../src/page/connectEngine.ts'

const dedicated = (): Worker => {
  throw new Error('no worker in this test')
}

describe('connectEngine', () => {
  it('says what is wrong with its options', async () => {
    const bad: [unknown, string][] = [
      [null, 'connectEngine needs an options object { name, dedicated }'],
      [{ name: '', dedicated }, 'connectEngine: name must be a non-empty string of at most 200 characters, got '],
      [{ name: 'fleet' }, 'connectEngine: dedicated must be a function making the host worker'],
      [{ name: 'fleet', dedicated, shared: 'worker.js' }, 'connectEngine: shared must be a function making the host SharedWorker'],
      [{ name: 'fleet', dedicated, mode: 'tabs' }, "connectEngine: mode must be 'auto', 'shared', 'leader' or 'single', got tabs"],
      [{ name: 'fleet', dedicated, maxQueuedEvents: 0 }, 'connectEngine: maxQueuedEvents must be an integer >= 1, got 0'],
      [{ name: 'fleet', dedicated, election: { heartbeatMs: 500, staleMs: 600 } }, 'connectEngine: election.staleMs must be at least twice heartbeatMs, got 600'],
      [{ name: 'fleet', dedicated, election: { beatMs: 500 } }, 'connectEngine: election'],
      [{ name: 'fleet', dedicated, worker: 'x' }, 'connectEngine'],
      [{ name: 'fleet', dedicated, aggregates: { latency: [0.95] } }, "connectEngine: aggregates must be the host engine's aggregates option (quantiles, distinct, ... by name)"],
      [{ name: 'fleet', dedicated, aggregates: null }, "connectEngine: aggregates must be the host engine's aggregates option"],
      [{ name: 'fleet', dedicated, claim: 'd1' }, 'connectEngine: claim must be a source claim of claimSource (with a source and a retire())'],
      [{ name: 'fleet', dedicated, claim: { source: 'd1' } }, 'connectEngine: claim must be a source claim'],
    ]
    for (const [options, message] of bad) await expect(connectEngine(options as ConnectEngineOptions), JSON.stringify(options)).rejects.toThrow(message)
  })

  it('says what the browser lacks for a mode it is told to use', async () => {
    await expect(connectEngineWith({ name: 'fleet', dedicated, mode: 'shared' }, { sharedWorkers: false, locks: null })).rejects.toThrow(
      "connectEngine: mode 'shared' needs SharedWorker in this browser and the shared option",
    )
    await expect(connectEngineWith({ name: 'fleet', dedicated, mode: 'leader' }, { sharedWorkers: false, locks: null })).rejects.toThrow(
      "connectEngine: mode 'leader' needs Web Locks (a secure context) and BroadcastChannel",
    )
  })

  it('fails clearly when the worker file cannot be started', async () => {
    await expect(connectEngineWith({ name: 'fleet', dedicated, mode: 'single' }, { sharedWorkers: false, locks: null })).rejects.toThrow('no worker in this test')
  })
})

describe('hostEngine', () => {
  it('says what is wrong with its options', () => {
    const good: HostEngineOptions = { name: 'fleet', engine: { windows: tumbling(1_000) } }
    expect(() => checkHostOptions(good)).not.toThrow()
    const bad: [unknown, string][] = [
      [null, 'hostEngine needs an options object { name, engine }'],
      [{ ...good, name: 7 }, 'hostEngine: name must be a non-empty string of at most 200 characters, got 7'],
      [{ ...good, engine: 'tumbling' }, "hostEngine: engine must be the engine's options or a function of the page's config returning them, got tumbling"],
      [{ ...good, log: true }, 'hostEngine: log must be false or an object, got true'],
      [{ ...good, log: { durability: 'strict', flush: 1 } }, 'hostEngine: log'],
      [{ ...good, setup: {} }, 'hostEngine: setup must be a function'],
      [{ ...good, commands: { reset: 1 } }, 'hostEngine: commands.reset must be a function'],
      [{ ...good, credits: 0.5 }, 'hostEngine: credits must be an integer >= 1, got 0.5'],
      [{ ...good, frameMs: -1 }, 'hostEngine: frameMs must be a finite number of ms >= 0, got -1'],
      [{ ...good, frames: 16 }, 'hostEngine'],
    ]
    for (const [options, message] of bad) expect(() => checkHostOptions(options as HostEngineOptions), JSON.stringify(options)).toThrow(message)
  })
})
