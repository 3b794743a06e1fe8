import { errorFromWire, type HostCall, type WireError } from '../protocol/messages.ts'
import type { HostLink } from './hostLink.ts'

interface PendingCall {
  readonly call: HostCall
  /** Safe to send again to the next host (reads and idempotent moves). */
  readonly retry: boolean
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
  sent: boolean
}

/**
 * The page's calls to the engine's host (`nextSeq`, `advanceWatermark`, `tick`, `command`)
 * until each is answered. A call made while no host has welcomed the page waits here and goes
 * to the next host that does. When a host goes away, a call it may have run is only sent again
 * if running it twice is harmless; any other is rejected, saying it may or may not have run,
 * rather than silently run twice.
 *
 * @example
 * const calls = new HostCalls()
 * const seq = calls.add({ op: 'nextSeq', source: 'sensor-1' }, true, welcomedLink)
 * // on the host's { t: 'reply', req, value }:
 * calls.reply(req, value, undefined, false)
 */
export class HostCalls {
  readonly #calls = new Map<number, PendingCall>()
  #next = 1

  /**
   * Registers a call and sends it at once through `link` (the link of a host that welcomed the
   * page, or null when there is none yet). Resolves with the host's answer.
   */
  add(call: HostCall, retry: boolean, link: HostLink | null): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const req = this.#next++
      const pending: PendingCall = { call, retry, resolve, reject, sent: false }
      this.#calls.set(req, pending)
      if (link !== null) this.#send(link, req, pending)
    })
  }

  /** Sends every call that waits for a host to the one that just welcomed the page. */
  sendWaiting(link: HostLink): void {
    for (const [req, call] of this.#calls) {
      if (call.sent) continue
      this.#send(link, req, call)
    }
  }

  #send(link: HostLink, req: number, pending: PendingCall): void {
    pending.sent = true
    try {
      link.send({ t: 'call', req, call: pending.call })
    } catch (error) {
      // The call cannot cross to the host (a command payload the structured clone cannot copy):
      // it fails alone, with the reason; the others still go.
      this.#calls.delete(req)
      const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
      pending.reject(new TypeError(`${pending.call.op} cannot be sent to the engine's host (its arguments must be structured-cloneable): ${detail}`))
    }
  }

  /** The host went away: calls safe to repeat wait for the next one, the others fail. */
  hostLost(reason: string): void {
    for (const [req, call] of this.#calls) {
      if (!call.sent || call.retry) {
        call.sent = false
        continue
      }
      this.#calls.delete(req)
      call.reject(new Error(`the engine's host went away before answering ${call.call.op} (${reason}); it may or may not have run it`))
    }
  }

  /** The host's answer to call `req`; a refusal marked `retry` sends a repeatable call again to the next host. */
  reply(req: number, value: unknown, error: WireError | undefined, retry: boolean): void {
    const call = this.#calls.get(req)
    if (call === undefined) return
    if (error !== undefined && retry && call.retry) {
      call.sent = false
      return
    }
    this.#calls.delete(req)
    if (error === undefined) call.resolve(value)
    else call.reject(errorFromWire(error))
  }

  /** Fails every call still waiting (the engine closed or no host can serve it). */
  rejectAll(error: Error): void {
    for (const call of this.#calls.values()) call.reject(error)
    this.#calls.clear()
  }
}
