/**
 * What the relay tests share: waiting on events (never on time), a fake clock for reconnect
 * timers, device and dashboard engines.
 */
import { createEngine, manual, type StreamEvent, type SyncStatus, type TidemarkEngine, tumbling } from '@tidemark/engine'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { bindDoc } from '../../src/binding/bindDoc.ts'
import type { BindDocOptions } from '../../src/binding/bindDocOptions.ts'
import { connectRelay } from '../../src/relay/connectRelay.ts'
import type { ConnectRelayOptions } from '../../src/relay/connectRelayOptions.ts'
import type { Relay } from '../../src/relay/relayApi.ts'
import { syncStatusTracker } from '../../src/transport/syncStatusTracker.ts'

/** The most a test waits for a socket event before it fails (the events themselves take milliseconds). */
const EVENT_TIMEOUT_MS = 5_000

/**
 * Resolves once `check()` holds, checking again on every notification of `subscribe`; rejects
 * naming `what` when it has not held after a few seconds.
 */
export function until(what: string, check: () => boolean, subscribe: (notify: () => void) => () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    if (check()) {
      resolve()
      return
    }
    let stop = (): void => {}
    const timer = setTimeout(() => {
      stop()
      reject(new Error(`timed out waiting for ${what}`))
    }, EVENT_TIMEOUT_MS)
    stop = subscribe(() => {
      if (!check()) return
      clearTimeout(timer)
      stop()
      resolve()
    })
  })
}

/** The doc's sync status. */
export const statusOf = (doc: Y.Doc): SyncStatus => syncStatusTracker(doc).status()

/** Waits until the doc's sync status satisfies `check`. */
export function untilStatus(doc: Y.Doc, what: string, check: (status: SyncStatus) => boolean): Promise<void> {
  return until(what, () => check(statusOf(doc)), (notify) => syncStatusTracker(doc).subscribe(notify))
}

/** Waits until an engine's state satisfies `check` (re-checked on every notification, sync status included). */
export function untilEngine(engine: TidemarkEngine, what: string, check: () => boolean): Promise<void> {
  return until(what, check, (notify) => engine.subscribe(notify))
}

/** Reconnect timers held until the test runs them. */
export class FakeTimers {
  readonly #pending = new Map<number, { run: () => void; ms: number }>()
  readonly #listeners = new Set<() => void>()
  #next = 1

  readonly setTimeout = (run: () => void, ms: number): unknown => {
    const id = this.#next++
    this.#pending.set(id, { run, ms })
    for (const listener of this.#listeners) listener()
    return id
  }

  /** Calls `listener` whenever a timer is set (a client scheduled its next attempt). */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  readonly clearTimeout = (handle: unknown): void => {
    this.#pending.delete(handle as number)
  }

  /** Delays of the timers waiting now, in the order they were set. */
  delays(): number[] {
    return [...this.#pending.values()].map((timer) => timer.ms)
  }

  /** Runs every timer waiting now, shortest delay first (a clock moved past all of them). */
  runAll(): void {
    this.runUpTo(Number.POSITIVE_INFINITY)
  }

  /** Runs the timers waiting now whose delay is at most `ms`, shortest first (the clock moved `ms` since they were set). */
  runUpTo(ms: number): void {
    const due = [...this.#pending.entries()].filter(([, timer]) => timer.ms <= ms).sort((a, b) => a[1].ms - b[1].ms)
    for (const [id] of due) this.#pending.delete(id)
    for (const [, timer] of due) timer.run()
  }
}

/**
 * A relay client over `ws`, its errors collected rather than logged. Its silence check is off
 * unless `silenceMs` is given: tests that read the client's timers see only the ones they test
 * (relaySilence.test.ts tests that check).
 */
export function relayClient(url: ConnectRelayOptions['url'], token: ConnectRelayOptions['token'], options: Partial<ConnectRelayOptions> = {}): { relay: Relay; errors: Error[] } {
  const errors: Error[] = []
  const relay = connectRelay({ url, token, WebSocket, onError: (error) => errors.push(error), silenceMs: Number.POSITIVE_INFINITY, ...options })
  return { relay, errors }
}

export const W = 'tumbling:60000'
export const T0 = 1_700_000_040_000 - (1_700_000_040_000 % 60_000)

/** An engine with one-minute windows and a manual watermark. */
export function fleetEngine(replicaId: string): TidemarkEngine {
  return createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId }) as TidemarkEngine
}

/** `n` readings of `source`, key `temp`, one a second from `T0`, numbered from `from`. */
export function readings(source: string, n: number, from = 1): StreamEvent[] {
  return Array.from({ length: n }, (_, i) => ({ id: `${source}-${from + i}`, source, seq: from + i, ts: T0 + (from + i) * 1000, key: 'temp', value: from + i }))
}

/** A device: its engine bound to a fresh doc (with `bind`'s options), joined to its room. */
export function device(relay: Relay, room: string, replicaId: string, bind: BindDocOptions = {}): { engine: TidemarkEngine; doc: Y.Doc } {
  const engine = fleetEngine(replicaId)
  const doc = new Y.Doc()
  bindDoc(engine, doc, bind)
  relay.join(doc, room)
  return { engine, doc }
}

/** Events counted in the engine's windows of key `temp`, from every source. */
export function counted(engine: TidemarkEngine): number {
  return engine.results({ key: 'temp' }).reduce((sum, result) => sum + result.count, 0)
}
