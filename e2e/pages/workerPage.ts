/**
 * The worker e2e page: connects to the engine its origin hosts in a worker (`connectEngine`),
 * and on demand produces `@tidemark/storm` readings of one device source into it, keeping a
 * report of every batch once it is durable. `?relay=ws://…&token=…` makes the host join the relay;
 * `?claim=<prefix>` claims the tab's source (`claimSource`) and gives the claim to `connectEngine`.
 * Tests reach it through `window.workerPage` (Playwright, or a raw CDP client for freezes).
 */
import type { StreamEvent } from '@tidemark/engine'
import { type StormBatchReport, stormReading } from '@tidemark/storm/page'
import { claimSource, listSources, type SourceClaim } from '@tidemark/idb'
import { connectEngine, type WorkerConnection } from '@tidemark/worker'
import { WORKER_ENGINE_NAME, type WorkerPageConfig } from './workerConfig.ts'
import { engineSnapshot, type WorkerPageSnapshot } from './workerSnapshot.ts'

const params = new URLSearchParams(location.search)

/** What the page tells a test about itself. */
export interface WorkerPageInfo {
  readonly connection: WorkerConnection
  readonly applied: number
  readonly sharedWorker: boolean
  /** Lifecycle events this page saw (`freeze`, `resume`), with `Date.now()`. */
  readonly lifecycle: readonly { readonly event: string; readonly at: number }[]
  /** Leader mode: steals of leadership announced on the tab channel that this tab heard. */
  readonly steals: readonly { readonly from: string; readonly epoch: number; readonly at: number }[]
  /** Content-Security-Policy violations (`directive blocked-uri`). */
  readonly violations: readonly string[]
  /** When each host welcomed this page (`Date.now()`), with its instance and epoch. */
  readonly hosts: readonly { readonly instance: string; readonly epoch: number; readonly at: number }[]
}

export interface WorkerPageApi {
  info(): WorkerPageInfo
  /** Starts producing readings `1, 2, …` of `source` (`stormReading(seed, source, seq)`), `batch` every `everyMs`. */
  produce(options: { readonly source: string; readonly seed: number; readonly batch: number; readonly everyMs: number; readonly from?: number }): void
  /** Stops producing; resolves once every batch is durable (or failed), with the last seq produced. */
  stop(): Promise<{ readonly produced: number; readonly errors: readonly string[] }>
  /** Reports of durable batches not taken yet. */
  takeReports(): StormBatchReport[]
  snapshot(): WorkerPageSnapshot
  nextSeq(source: string): Promise<number>
  /** The host engine's sync status, as this page mirrors it. */
  sync(): { readonly state: string; readonly peers: number }
  /** Whether this page's policy refuses a `blob:` worker (it must: the policy is in force). */
  blobWorkerRefused(): Promise<boolean>
  /** The names of the origin's held Web Locks (`navigator.locks.query()`). */
  locks(): Promise<readonly string[]>
  /** Runs one of the host's app commands (`hostEngine({ commands })`). */
  command(name: string): Promise<unknown>
  /** `?claim=`: the tab's claimed source and how it was found; null without a claim. */
  claimed(): { readonly source: string; readonly reuse: SourceClaim['reuse'] } | null
  /** Finishes `source` on the host (`engine.finishSource`). */
  finish(source: string): Promise<void>
  /** The registered sources of `prefix` (`listSources`): which are finished (retired) and which a tab holds. */
  sources(prefix: string): Promise<readonly { readonly source: string; readonly finished: boolean; readonly held: boolean }[]>
}

declare global {
  interface Window {
    workerPage?: WorkerPageApi
    workerPageError?: string
  }
}

const lifecycle: { event: string; at: number }[] = []
/** Content-Security-Policy violations this page saw (the page carries a strict policy). */
const violations: string[] = []
document.addEventListener('securitypolicyviolation', (event) => violations.push(`${event.violatedDirective} ${event.blockedURI}`))
for (const event of ['freeze', 'resume']) document.addEventListener(event, () => lifecycle.push({ event, at: Date.now() }))
/** Leader mode: the steals announced on the engine's tab channel, as this page's own listener hears them (its tab's included). */
const steals: { readonly from: string; readonly epoch: number; readonly at: number }[] = []
if (typeof BroadcastChannel === 'function') {
  new BroadcastChannel(`tidemark-worker:${WORKER_ENGINE_NAME}`).addEventListener('message', (event: MessageEvent) => {
    const m = (event.data as { m?: { t?: unknown; tab?: unknown; epoch?: unknown } } | null)?.m
    if (m?.t === 'steal') steals.push({ from: String(m.tab), epoch: Number(m.epoch), at: Date.now() })
  })
}

async function start(): Promise<WorkerPageApi> {
  const config: WorkerPageConfig = { relayUrl: params.get('relay'), token: params.get('token') }
  const prefix = params.get('claim')
  const claim = prefix === null ? null : await claimSource({ prefix })
  const engine = await connectEngine({
    ...(claim === null ? {} : { claim }),
    name: WORKER_ENGINE_NAME,
    shared: (name) => new SharedWorker(new URL('./workerHost.ts', import.meta.url), { type: 'module', name }),
    dedicated: (name) => new Worker(new URL('./workerHost.ts', import.meta.url), { type: 'module', name }),
    config,
  })
  const hosts: { instance: string; epoch: number; at: number }[] = []
  const noteHost = (connection: WorkerConnection): void => {
    if (connection.state === 'connected' && hosts.at(-1)?.instance !== connection.instance) hosts.push({ instance: connection.instance, epoch: connection.epoch, at: Date.now() })
    render()
  }
  const render = (): void => {
    const { instance, mode, state } = engine.connection()
    setText('host', instance.slice(0, 8))
    setText('mode', `${mode}, ${state}`)
    setText('applied', `${engine.stats().applied} applied`)
  }
  engine.onConnection(noteHost)
  noteHost(engine.connection())
  engine.subscribe(render)

  const reports: StormBatchReport[] = []
  const errors: string[] = []
  const pending = new Set<Promise<void>>()
  let timer: ReturnType<typeof setTimeout> | null = null
  let produced = 0

  const pump = (source: string, seed: number, batch: number, everyMs: number): void => {
    const from = produced + 1
    const to = produced + batch
    produced = to
    const events: StreamEvent[] = []
    for (let seq = from; seq <= to; seq++) events.push(stormReading(seed, source, seq))
    const done = engine.ingest(events).then(
      async (receipt) => {
        await receipt.durable
        const { accepted, beyondLateness, duplicates, rejected } = receipt
        reports.push({ source, from, to, accepted, beyondLateness, duplicates, rejected })
      },
      (error: unknown) => {
        errors.push(`${from}..${to}: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`)
      },
    )
    pending.add(done)
    void done.finally(() => pending.delete(done))
    timer = setTimeout(() => pump(source, seed, batch, everyMs), everyMs)
  }

  return {
    info: () => ({ connection: engine.connection(), applied: engine.stats().applied, sharedWorker: typeof SharedWorker === 'function', lifecycle: [...lifecycle], steals: [...steals], violations: [...violations], hosts: [...hosts] }),
    produce({ source, seed, batch, everyMs, from = 1 }) {
      if (timer !== null) return
      produced = from - 1
      pump(source, seed, batch, everyMs)
    },
    async stop() {
      if (timer !== null) clearTimeout(timer)
      timer = null
      await Promise.all([...pending])
      return { produced, errors: [...errors] }
    },
    takeReports: () => reports.splice(0),
    snapshot: () => engineSnapshot(engine),
    nextSeq: (source) => engine.nextSeq(source),
    sync: () => ({ state: engine.syncStatus().state, peers: engine.syncStatus().peers }),
    blobWorkerRefused() {
      const before = violations.length
      return new Promise<boolean>((resolve) => {
        const url = URL.createObjectURL(new Blob(['postMessage(1)'], { type: 'text/javascript' }))
        try {
          const worker = new Worker(url)
          worker.onmessage = () => resolve(false)
          worker.onerror = () => resolve(true)
        } catch {
          resolve(true)
        }
        setTimeout(() => resolve(violations.length > before), 2_000)
      })
    },
    locks: async () => ((await navigator.locks.query()).held ?? []).map((lock) => lock.name ?? ''),
    command: (name) => engine.command(name),
    claimed: () => (claim === null ? null : { source: claim.source, reuse: claim.reuse }),
    finish: (source) => engine.finishSource(source),
    sources: async (of) => (await listSources({ prefix: of })).map(({ source, finished, held }) => ({ source, finished, held })),
  }
}

function setText(id: string, text: string): void {
  const element = document.getElementById(id)
  if (element !== null) element.textContent = text
}

start().then(
  (api) => {
    window.workerPage = api
    setText('status', 'ready')
  },
  (error: unknown) => {
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
    window.workerPageError = reason
    setText('status', `failed: ${reason}`)
  },
)
