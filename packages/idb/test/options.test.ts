/**
 * Storage options are checked before anything is opened: unknown keys are named with the
 * closest known one, and bad values get an error naming the option.
 */
import 'fake-indexeddb/auto'
import { IDBFactory } from 'fake-indexeddb'
import { describe, expect, it, vi } from 'vitest'
import { tumbling } from '@tidemark/engine'
import { indexedDbPersistence, openEngine, type OpenEngineOptions } from '../src/index.ts'
import { finalArchive } from '../src/archive.ts'
import { memoryPersistence } from '../src/memory.ts'

const windows = tumbling(10)

describe('openEngine options', () => {
  it('refuses unknown and bad options before it opens the storage', async () => {
    const persistence = memoryPersistence()
    const open = vi.spyOn(persistence, 'open')
    const attempt = (extra: Record<string, unknown>) => openEngine({ windows, persistence, ...extra } as OpenEngineOptions)
    await expect(attempt({ checkpointEvry: { events: 5 } })).rejects.toThrow("openEngine: unknown option 'checkpointEvry' (did you mean 'checkpointEvery'?)")
    await expect(attempt({ allowedLatness: 5 })).rejects.toThrow("openEngine: unknown option 'allowedLatness' (did you mean 'allowedLateness'?)")
    await expect(attempt({ watermark: 5000 })).rejects.toThrow(/write watermark: boundedOutOfOrderness\(5000\)/)
    await expect(attempt({ limits: { maxBatch: 0 } })).rejects.toThrow(/limits.maxBatch must be an integer >= 1/)
    await expect(attempt({ checkpointEvery: { events: 0 } })).rejects.toThrow(/checkpointEvery.events must be a number > 0/)
    await expect(attempt({ checkpointEvery: { event: 5 } })).rejects.toThrow(/unknown option 'event' \(did you mean 'events'\?\)/)
    await expect(attempt({ checkpointEvery: { events: Number.POSITIVE_INFINITY, ms: Number.POSITIVE_INFINITY } })).rejects.toThrow(/cannot both be Infinity/)
    await expect(attempt({ writeRetry: { firstMs: 0 } })).rejects.toThrow(/writeRetry.firstMs must be a finite number of ms > 0/)
    await expect(attempt({ writeRetry: { firstMs: 5_000, maxMs: 1_000 } })).rejects.toThrow(/firstMs \(5000\) must be at most maxMs/)
    await expect(attempt({ checkpointOnClose: 'yes' })).rejects.toThrow(/checkpointOnClose must be true or false/)
    await expect(attempt({ timers: { setTimeout } })).rejects.toThrow(/timers must be \{ setTimeout, clearTimeout \}/)
    await expect(attempt({ timer: { setTimeout, clearTimeout } })).rejects.toThrow("openEngine: unknown option 'timer' (did you mean 'timers'?)")
    await expect(attempt({ trigger: { early: 'never' } })).rejects.toThrow(/trigger.early must be everyElement\(\)/)
    await expect(attempt({ accumulation: 'retracting' })).rejects.toThrow(/accumulation must be 'accumulating' or 'discarding'/)
    await expect(attempt({ maxFutureSkew: -1 })).rejects.toThrow(/maxFutureSkew must be a number >= 0/)
    await expect(openEngine({ windows } as OpenEngineOptions)).rejects.toThrow(/persistence must be a Persistence/)
    expect(open).not.toHaveBeenCalled()
    const engine = await openEngine({ windows, persistence, checkpointEvery: { events: Number.POSITIVE_INFINITY }, writeRetry: { maxMs: 5_000 } })
    expect(open).toHaveBeenCalledOnce()
    await engine.close()
  })
})

describe('persistence options', () => {
  it('indexedDbPersistence names the bad option', () => {
    const indexedDB = new IDBFactory()
    const make = (extra: Record<string, unknown>) => () => indexedDbPersistence({ name: 'db', indexedDB, ...extra } as never)
    expect(make({ durabilty: 'strict' })).toThrow("indexedDbPersistence: unknown option 'durabilty' (did you mean 'durability'?)")
    expect(make({ durability: 'fast' })).toThrow(/durability must be 'default', 'strict' or 'relaxed', got fast/)
    expect(make({ archive: 100 })).toThrow(/archive must be made by finalArchive\(\) from @tidemark\/idb\/archive, got 100/)
    expect(make({ coalesce: 1 })).toThrow(/coalesce must be true or false/)
    expect(make({ claim: 'dash-1' })).toThrow(/claim must be the SourceClaim from claimSource\(\)/)
    expect(make({ indexedDB: {} })).toThrow(/indexedDB must be an IDBFactory/)
    expect(make({ checkpointEvery: { ms: Number.NaN } })).toThrow(/checkpointEvery.ms must be a number > 0/)
    expect(make({ name: '' })).toThrow(/name must be a non-empty string/)
    expect(make({ durability: 'strict', archive: finalArchive(), coalesce: false })).not.toThrow()
  })

  it('memoryPersistence names the bad option', () => {
    expect(() => memoryPersistence({ archiv: finalArchive() } as never)).toThrow("memoryPersistence: unknown option 'archiv' (did you mean 'archive'?)")
    expect(() => memoryPersistence({ archive: {} as never })).toThrow(/memoryPersistence: archive must be made by finalArchive\(\)/)
    expect(() => memoryPersistence({ checkpointEvery: { events: '5' as never } })).toThrow(/checkpointEvery.events must be a number > 0/)
  })

  it('finalArchive names the bad option, and belongs to one persistence', () => {
    expect(() => finalArchive({ limt: 5 } as never)).toThrow("finalArchive: unknown option 'limt' (did you mean 'limit'?)")
    expect(() => finalArchive({ limit: 0 })).toThrow(/finalArchive: limit must be an integer >= 1 of changes \(leave the archive out to keep none\), got 0/)
    expect(() => finalArchive({ limit: 1.5 })).toThrow(/limit must be an integer >= 1/)
    expect(() => finalArchive(null as never)).toThrow(/finalArchive options must be an object/)
    const archive = finalArchive()
    indexedDbPersistence({ name: 'first', indexedDB: new IDBFactory(), archive })
    expect(() => indexedDbPersistence({ name: 'second', indexedDB: new IDBFactory(), archive })).toThrow(
      'indexedDbPersistence("second"): this finalArchive() is the archive of indexedDbPersistence("first") already; give each persistence its own',
    )
    expect(() => memoryPersistence({ archive })).toThrow(/memoryPersistence: this finalArchive\(\) is the archive of/)
  })
})
