import { OverflowError } from '@tidemark/engine'
import { errorFromWire, type HostCall, type WireError } from '../protocol/messages.ts'
import type { HostLink } from './hostLink.ts'

interface PendingCall {
  /** What goes to the host (an `advance` merged with later ones moves to the highest). */
  call: HostCall
  /** Safe to send again to the next host (reads and idempotent moves). */
  readonly retry: boolean
  /** Every caller this call answers (several when waiting calls were merged). */
  readonly waiters: { readonly resolve: (value: unknown) => void; readonly reject: (error: unknown) => void }[]
  sent: boolean
  /** The last batch (ingest request number) made before the call: re-sent to a next host, the call follows it, and precedes the batches after it. */
  after: number
}

/** Calls that may wait on the page at once; past it a call rejects at once with `OverflowError`. */
export const MAX_PENDING_CALLS = 10_000

/** Calls that merge while they wait for a host: running one answers them all. */
type MergedOp = 'tick' | 'advance'

/**
 * The page's calls to the engine's host (`nextSeq`, `advanceWatermark`, `tick`, `command`)
 * until each is answered. A call made while no host has welcomed the page waits here and goes
 * to the next host that does. When a host goes away, a call it may have run is only sent again
 * if running it twice is harmless; any other is rejected, saying it may or may not have run,
 * rather than silently run twice. Nothing grows without bound: waiting `tick`s merge into one,
 * waiting `advanceWatermark`s into one to the highest time, and past `MAX_PENDING_CALLS`
 * calls a new one rejects at once with an `OverflowError`.
 *
 * @example
 * const calls = new HostCalls()
 * const seq = calls.add({ op: 'nextSeq', source: 'sensor-1' }, true, welcomedLink)
 * // on the host's { t: 'reply', req, value }:
 * calls.reply(req, value, undefined, false)
 */
export class HostCalls {
  readonly #calls = new Map<number, PendingCall>()
  /** The waiting (unsent) call of each mergeable op, which later ones of that op join. */
  readonly #merging = new Map<MergedOp, number>()
  #next = 1

  /** True when a call waits on the page unsent (for a host, or held among batches): a later call must not pass it. */
  get waiting(): boolean {
    for (const call of this.#calls.values()) if (!call.sent) return true
    return false
  }

  /** Calls not yet answered. */
  get pending(): number {
    return this.#calls.size
  }

  /**
   * Registers a call and sends it at once through `link` (the link of a host that welcomed the
   * page, or null when there is none yet). Resolves with the host's answer.
   */
  add(call: HostCall, retry: boolean, link: HostLink | null, after = 0): Promise<unknown> {
    const joined = link === null ? this.#join(call, after) : null
    if (joined !== null) return joined
    const full = this.#full()
    if (full !== null) {
      // At the bound a waiting tick or advance still joins the last one of its op, which moves
      // past the batches between them: waiting ticks and advances never reach the bound alone.
      const merged = link === null ? this.#join(call, after, true) : null
      return merged ?? Promise.reject(full)
    }
    return new Promise((resolve, reject) => {
      const req = this.#next++
      const pending: PendingCall = { call, retry, waiters: [{ resolve, reject }], sent: false, after }
      this.#calls.set(req, pending)
      if (link !== null) this.#send(link, req, pending)
      else this.#waits(req, pending)
    })
  }

  /** The refusal of one more call when `MAX_PENDING_CALLS` wait already, else null. */
  #full(): OverflowError | null {
    const waiting = this.#calls.size
    if (waiting < MAX_PENDING_CALLS) return null
    return new OverflowError('worker host calls', `${waiting} calls wait on this page for the engine's host (MAX_PENDING_CALLS); await earlier calls before making more`)
  }

  /**
   * Sends the calls that wait for a host to the one that welcomed the page, each once the batches
   * made before it were sent: those whose last earlier batch is before `unsentFrom`, the oldest
   * batch not sent yet (Infinity: every call).
   */
  sendWaiting(link: HostLink, unsentFrom = Number.POSITIVE_INFINITY): void {
    // Told before every batch the page sends: most often there is no call at all.
    if (this.#calls.size === 0) return
    for (const [req, call] of this.#calls) {
      if (call.sent || call.after >= unsentFrom) continue
      this.#send(link, req, call)
    }
  }

  /** The host went away: calls safe to repeat wait for the next one, the others fail. */
  hostLost(reason: string): void {
    for (const [req, call] of this.#calls) {
      if (!call.sent || call.retry) {
        call.sent = false
        this.#waits(req, call)
        continue
      }
      this.#calls.delete(req)
      settle(call, 'reject', new Error(`the engine's host went away before answering ${call.call.op} (${reason}); it may or may not have run it`))
    }
  }

  /** The host's answer to call `req`; a refusal marked `retry` sends a repeatable call again to the next host. */
  reply(req: number, value: unknown, error: WireError | undefined, retry: boolean): void {
    const call = this.#calls.get(req)
    if (call === undefined) return
    if (error !== undefined && retry && call.retry) {
      call.sent = false
      this.#waits(req, call)
      return
    }
    this.#calls.delete(req)
    if (error === undefined) settle(call, 'resolve', value)
    else settle(call, 'reject', errorFromWire(error))
  }

  /** Fails every call still waiting (the engine closed or no host can serve it). */
  rejectAll(error: Error): void {
    for (const call of this.#calls.values()) settle(call, 'reject', error)
    this.#calls.clear()
    this.#merging.clear()
  }

  /** Joins `call` to the waiting call of its op, if it merges and there is one; returns its promise. */
  #join(call: HostCall, after: number, pastBatches = false): Promise<unknown> | null {
    if (call.op !== 'tick' && call.op !== 'advance') return null
    const req = this.#merging.get(call.op)
    const into = req === undefined ? undefined : this.#calls.get(req)
    // Only calls with no batch made between them merge: a merged call must not pass a batch.
    if (into === undefined || into.sent || (into.after !== after && !pastBatches)) return null
    // One advance to the highest time answers every advance merged into it; one tick, every tick.
    if (call.op === 'advance' && into.call.op === 'advance' && call.to > into.call.to) into.call = call
    into.after = Math.max(into.after, after)
    return new Promise((resolve, reject) => {
      into.waiters.push({ resolve, reject })
    })
  }

  /** `pending` waits for a host: later calls of its op join it, unless one already waits. */
  #waits(req: number, pending: PendingCall): void {
    const op = pending.call.op
    if (op !== 'tick' && op !== 'advance') return
    const current = this.#merging.get(op)
    const into = current === undefined ? undefined : this.#calls.get(current)
    if (into === undefined || into.sent || into.after !== pending.after) this.#merging.set(op, req)
  }

  #send(link: HostLink, req: number, pending: PendingCall): void {
    pending.sent = true
    const op = pending.call.op
    if ((op === 'tick' || op === 'advance') && this.#merging.get(op) === req) this.#merging.delete(op)
    try {
      link.send({ t: 'call', req, call: pending.call })
    } catch (error) {
      // The call cannot cross to the host (a command payload the structured clone cannot copy):
      // it fails alone, with the reason; the others still go.
      this.#calls.delete(req)
      const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
      settle(pending, 'reject', new TypeError(`${op} cannot be sent to the engine's host (its arguments must be structured-cloneable): ${detail}`))
    }
  }
}

function settle(call: PendingCall, how: 'resolve' | 'reject', value: unknown): void {
  for (const waiter of call.waiters) waiter[how](value)
}
