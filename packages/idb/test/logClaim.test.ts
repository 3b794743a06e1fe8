import 'fake-indexeddb/auto'
import { IDBFactory } from 'fake-indexeddb'
import { describe, expect, it } from 'vitest'
import { tumbling } from '@tidemark/engine'
import { reading as scenarioReading } from '@tidemark/engine/testing'
import { indexedDbPersistence, isFencedError, isLogConfigurationError, openEngine } from '../src/index.ts'
import { claimLog, type LogLocks, logDatabaseName } from '../src/log.ts'
import { raw } from './fakeStorage.ts'
import { ingestOp } from './walOps.ts'

/** Exclusive locks of one origin with a wait queue and `steal`, as `navigator.locks` has them. */
class QueuedLocks implements LogLocks {
  readonly #holders = new Map<string, { release: () => void; reject: (error: unknown) => void }>()
  readonly #queues = new Map<string, (() => void)[]>()

  request(name: string, options: { readonly steal?: boolean; readonly signal?: AbortSignal }, callback: (lock: unknown) => Promise<void>): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const grant = (): void => {
        let done = false
        const finish = (outcome: () => void): void => {
          if (done) return
          done = true
          if (this.#holders.get(name)?.reject === holder.reject) this.#holders.delete(name)
          outcome()
          this.#queues.get(name)?.shift()?.()
        }
        const holder = { release: () => {}, reject: (error: unknown) => finish(() => reject(error)) }
        this.#holders.set(name, holder)
        callback({ name }).then(
          (value) => finish(() => resolve(value)),
          (error: unknown) => finish(() => reject(error)),
        )
      }
      queueMicrotask(() => {
        if (options.steal === true) {
          this.#holders.get(name)?.reject(new DOMException("Lock broken by another request with the 'steal' option.", 'AbortError'))
          grant()
        } else if (!this.#holders.has(name)) grant()
        else if (options.signal?.aborted === true) reject(options.signal.reason)
        else {
          const queue = this.#queues.get(name) ?? []
          const waiting = (): void => grant()
          queue.push(waiting)
          this.#queues.set(name, queue)
          options.signal?.addEventListener('abort', () => {
            queue.splice(queue.indexOf(waiting), 1)
            reject(options.signal?.reason)
          })
        }
      })
    })
  }

  held(name: string): boolean {
    return this.#holders.has(`tidemark:log:${name}`)
  }
}

/** Reading `seq` of `source`, 10 ms apart. */
const reading = (source: string, seq: number) => scenarioReading(source, seq, seq * 10, 1)

const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('claimLog', () => {
  it('raises the writer epoch by one per claim, stored in the log database', async () => {
    const factory = new IDBFactory()
    const locks = new QueuedLocks()
    const first = await claimLog({ name: 'fleet', locks, indexedDB: factory })
    expect([first.epoch, first.held, first.exclusive, first.stolen, first.database]).toEqual([1, true, true, false, 'tidemark-log-fleet'])
    await first.release()
    expect(first.held).toBe(false)
    const second = await claimLog({ name: 'fleet', locks, indexedDB: factory })
    expect(second.epoch).toBe(2)
    const db = await raw(factory, logDatabaseName('fleet'))
    expect(await db.get('meta', 'writerEpoch')).toBe(2)
    db.close()
  })

  it('waits for the holder to let go, unless it steals', async () => {
    const factory = new IDBFactory()
    const locks = new QueuedLocks()
    const first = await claimLog({ name: 'fleet', locks, indexedDB: factory })
    let waited = false
    const queued = claimLog({ name: 'fleet', locks, indexedDB: factory }).then((claim) => {
      waited = true
      return claim
    })
    await settle()
    expect(waited).toBe(false)
    await first.release()
    const second = await queued
    expect([second.epoch, second.stolen]).toEqual([2, false])

    let lost = false
    void second.lost.then(() => {
      lost = true
    })
    const thief = await claimLog({ name: 'fleet', locks, indexedDB: factory, steal: true })
    await settle()
    expect([thief.epoch, thief.stolen, lost, second.held]).toEqual([3, true, true, false])
  })

  it('gives up waiting when its signal aborts', async () => {
    const factory = new IDBFactory()
    const locks = new QueuedLocks()
    await claimLog({ name: 'fleet', locks, indexedDB: factory })
    const abort = new AbortController()
    const waiting = claimLog({ name: 'fleet', locks, indexedDB: factory, signal: abort.signal })
    abort.abort(new Error('the page closed'))
    await expect(waiting).rejects.toThrow('the page closed')
  })

  it('fences a writer that lost the log: its next append is refused and nothing of it is stored', async () => {
    const factory = new IDBFactory()
    const locks = new QueuedLocks()
    const old = await claimLog({ name: 'fleet', locks, indexedDB: factory })
    // A frozen writer does not learn that its lock was stolen until it runs again: its held flag stays true.
    const frozen = { held: true, epoch: old.epoch }
    const stale = indexedDbPersistence({ name: old.database, claim: frozen, indexedDB: factory })
    await stale.open()
    expect(await stale.append(ingestOp([reading('a', 1)]))).toBe(1)

    const next = await claimLog({ name: 'fleet', locks, indexedDB: factory, steal: true })
    const fresh = indexedDbPersistence({ name: next.database, claim: next, indexedDB: factory })
    const recovered = await fresh.open()
    expect(recovered.tail.map((record) => record.lsn)).toEqual([1])
    await fresh.checkpoint({ upToLsn: 1, state: new Uint8Array([1]) })

    // The thawed writer's lsn 2 is free again after the truncation: only the epoch stops it.
    const refused = await stale.append(ingestOp([reading('a', 2)])).then(
      () => null,
      (error: unknown) => error,
    )
    expect(isFencedError(refused)).toBe(true)
    expect((refused as Error).message).toBe(
      'indexedDbPersistence("tidemark-log-fleet"): another writer claimed this log (writer epoch 2, this handle has 1); record lsn 2 was not written',
    )
    await expect(stale.checkpoint({ upToLsn: 2, state: new Uint8Array([9]) })).rejects.toThrow(/writer epoch 2, this handle has 1/)
    expect(await fresh.append(ingestOp([reading('b', 1)]))).toBe(2)
    const db = await raw(factory, 'tidemark-log-fleet')
    expect(await db.getAllKeys('wal')).toEqual([2])
    db.close()
  })

  it('refuses to open a log under a claim a later writer replaced', async () => {
    const factory = new IDBFactory()
    const first = await claimLog({ name: 'fleet', indexedDB: factory, withoutLocks: 'single-tab', locks: undefined as unknown as LogLocks })
    const second = await claimLog({ name: 'fleet', indexedDB: factory, withoutLocks: 'single-tab', locks: undefined as unknown as LogLocks })
    expect([first.exclusive, first.epoch, second.epoch]).toEqual([false, 1, 2])
    const late = indexedDbPersistence({ name: first.database, claim: first, indexedDB: factory })
    await expect(late.open()).rejects.toThrow('another writer claimed this log (writer epoch 2, this handle has 1); open() refused')
  })

  it('hands an engine over: the new writer recovers every durable batch of the old one, whose later batches are refused', async () => {
    const factory = new IDBFactory()
    const locks = new QueuedLocks()
    const options = { windows: tumbling(1_000) }
    const oldClaim = await claimLog({ name: 'fleet', locks, indexedDB: factory })
    const frozen = { held: true, epoch: oldClaim.epoch }
    const old = await openEngine({ ...options, persistence: indexedDbPersistence({ name: oldClaim.database, claim: frozen, indexedDB: factory }) })
    await old.ingest([reading('d1', 1), reading('d1', 2)]).durable

    const claim = await claimLog({ name: 'fleet', locks, indexedDB: factory, steal: true })
    const next = await openEngine({ ...options, persistence: indexedDbPersistence({ name: claim.database, claim, indexedDB: factory }) })
    expect([next.stats().applied, next.nextSeq('d1')]).toEqual([2, 3])

    const late = old.ingest([reading('d1', 3)])
    await expect(late.durable).rejects.toSatisfy(isFencedError)
    await next.close()
    await claim.release()
    const reopened = await claimLog({ name: 'fleet', locks, indexedDB: factory })
    const after = await openEngine({ ...options, persistence: indexedDbPersistence({ name: reopened.database, claim: reopened, indexedDB: factory }) })
    expect([after.stats().applied, after.nextSeq('d1')]).toEqual([2, 3])
    await after.close()
  })

  it('says what is wrong with its options', async () => {
    await expect(claimLog({ name: '' })).rejects.toThrow('claimLog: name must be a non-empty string')
    await expect(claimLog({ name: 'fleet', steal: 'yes' as unknown as boolean })).rejects.toThrow('claimLog: steal must be true or false, got yes')
    await expect(claimLog({ name: 'fleet', withoutLocks: 'many' as 'single-tab' })).rejects.toThrow("withoutLocks must be 'single-tab'")
    await expect(claimLog({ name: 'fleet', wait: true } as never)).rejects.toThrow(/claimLog/)
    expect(() => indexedDbPersistence({ name: 'x', claim: { held: true, epoch: 0 } })).toThrow('claim.epoch must be an integer >= 1')
  })
})

describe('two builds of one app open at once (an old tab and a new deploy), one log and so one replica id', () => {
  const before = { windows: tumbling(1_000) }
  const after = { windows: tumbling(1_000), allowedLateness: 60_000 }

  it('with Web Locks the new build waits for the log while the old one holds it, and then cannot open it under its configuration', async () => {
    const factory = new IDBFactory()
    const locks = new QueuedLocks()
    const oldClaim = await claimLog({ name: 'fleet', locks, indexedDB: factory })
    const old = await openEngine({ ...before, persistence: indexedDbPersistence({ name: oldClaim.database, claim: oldClaim, indexedDB: factory }) })
    await old.ingest([reading('d1', 1)]).durable
    let granted = false
    const waiting = claimLog({ name: 'fleet', locks, indexedDB: factory }).then((claim) => {
      granted = true
      return claim
    })
    for (let i = 0; i < 5; i++) await settle()
    expect(granted).toBe(false)
    await old.close()
    await oldClaim.release()
    const claim = await waiting
    await expect(openEngine({ ...after, persistence: indexedDbPersistence({ name: claim.database, claim, indexedDB: factory }) })).rejects.toSatisfy(isLogConfigurationError)
    await claim.release()
  })

  it('without Web Locks both builds can claim the log at once, but the new one cannot open it under its configuration, even before a checkpoint', async () => {
    const factory = new IDBFactory()
    const oldClaim = await claimLog({ name: 'fleet', withoutLocks: 'single-tab', indexedDB: factory })
    const old = await openEngine({ ...before, persistence: indexedDbPersistence({ name: oldClaim.database, claim: oldClaim, indexedDB: factory }) })
    await old.ingest([reading('d1', 1)]).durable
    const claim = await claimLog({ name: 'fleet', withoutLocks: 'single-tab', indexedDB: factory })
    // No checkpoint yet (under 30 s and 100,000 events): the log's configuration, kept beside it, refuses the new build.
    await expect(openEngine({ ...after, persistence: indexedDbPersistence({ name: claim.database, claim, indexedDB: factory }) })).rejects.toSatisfy(isLogConfigurationError)
    // The second claim took the log (the old engine's next write is fenced), and the refused open read nothing into an engine.
    await expect(old.ingest([reading('d1', 2)]).durable).rejects.toSatisfy(isFencedError)
    await claim.release()
  })
})
