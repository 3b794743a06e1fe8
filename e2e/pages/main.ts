/**
 * The e2e page: claims a source for this tab (Web Locks), opens an engine over IndexedDB
 * with `openEngine`, and streams readings into it on demand, reporting every durable batch
 * to the test. After a crash or reload it shows what recovery found.
 */
import { type StreamEvent, tumbling } from '@tidemark/engine'
import { claimSource, indexedDbPersistence, openEngine, recoveryReport } from '@tidemark/idb'
import type { PageApi, PageSnapshot } from './pageApi.ts'
import { bootPage, setText, shellReady } from './pageBoot.ts'

const params = new URLSearchParams(location.search)

/** Reading `seq` of `source`: the same id, time and value every time it is generated. */
function reading(source: string, seq: number): StreamEvent {
  return { id: `${source}#${seq}`, source, seq, ts: seq, key: `k${seq % 4}`, value: 1 }
}

async function start(): Promise<PageApi> {
  // `?shell=0`: no service worker (tests that crash renderers, where a dying worker would hang the browser's network emulation).
  if (params.get('shell') !== '0') await shellReady()
  const claim = await claimSource({ prefix: params.get('prefix') ?? 'e2e' })
  const engine = await openEngine({
    windows: tumbling(1_000),
    persistence: indexedDbPersistence({ name: claim.database, claim }),
    checkpointEvery: { events: Number(params.get('checkpointEvery') ?? 20_000) },
  })
  const source = claim.source
  let nextSeq = engine.stats().applied + 1
  let durableSeq = nextSeq - 1
  let timer: ReturnType<typeof setTimeout> | null = null
  const errors: string[] = []

  const pump = (size: number, everyMs: number, upTo: number): void => {
    if (nextSeq > upTo) {
      timer = null
      return
    }
    const events: StreamEvent[] = []
    for (let k = 0; k < Math.min(size, upTo - nextSeq + 1); k++) events.push(reading(source, nextSeq + k))
    nextSeq += events.length
    const last = nextSeq - 1
    engine.ingest(events).durable.then(
      () => {
        if (last <= durableSeq) return
        durableSeq = last
        void window.reportDurable?.(source, last)
      },
      (error: unknown) => errors.push(error instanceof Error ? error.message : String(error)),
    )
    timer = setTimeout(() => pump(size, everyMs, upTo), everyMs)
  }

  const snapshot = (): PageSnapshot => {
    const stats = engine.stats()
    return {
      source,
      applied: stats.applied,
      duplicates: stats.duplicates,
      sources: stats.sources,
      durableSeq,
      nextSeq,
      walRecords: stats.walRecords,
      persistenceError: stats.persistenceError,
      errors: [...errors],
      online: navigator.onLine,
      controlled: navigator.serviceWorker.controller !== null,
    }
  }

  const render = (): void => {
    const s = snapshot()
    setText('source', s.source)
    setText('online', s.online ? 'online' : 'offline')
    setText('status', `${s.applied} events applied, durable up to seq ${s.durableSeq}, ${s.walRecords} log records`)
  }
  const report = recoveryReport(engine)
  setText(
    'recovery',
    report === undefined
      ? 'no recovery report'
      : `recovered ${report.replayedEvents} events from ${report.replayedRecords} log records after checkpoint ${report.checkpointLsn ?? 'none'} in ${report.durationMs.toFixed(1)} ms; ${report.corrupt.length} corrupt`,
  )
  engine.subscribe(render)
  addEventListener('online', render)
  addEventListener('offline', render)
  render()

  return {
    source,
    report,
    start({ batch, everyMs, upTo = Number.POSITIVE_INFINITY }) {
      if (timer === null) pump(batch, everyMs, upTo)
    },
    stop() {
      if (timer !== null) clearTimeout(timer)
      timer = null
    },
    snapshot,
    async reingest(from, to) {
      let accepted = 0
      let duplicates = 0
      for (let at = from; at <= to; at += 1_000) {
        const events: StreamEvent[] = []
        for (let seq = at; seq <= Math.min(to, at + 999); seq++) events.push(reading(source, seq))
        const receipt = engine.ingest(events)
        accepted += receipt.accepted
        duplicates += receipt.duplicates
        await receipt.durable
      }
      return { accepted, duplicates }
    },
    async probeNetwork() {
      try {
        await fetch(`/__probe?${Math.random()}`, { cache: 'no-store' })
        return true
      } catch {
        return false
      }
    },
    close: () => engine.close(),
  }
}

bootPage(
  start,
  'recovery',
  (api) => {
    window.tidemark = api
  },
  (reason) => {
    window.tidemarkError = reason
  },
)
