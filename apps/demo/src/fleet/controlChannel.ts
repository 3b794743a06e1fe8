import type { FleetSettings } from './fleetSettings.ts'

/**
 * Messages between the pages of one browser: dashboards and `?device=` tabs. They carry
 * settings and presence only: commands go to the devices' hosts, and readings and window state
 * travel through the Yjs documents.
 */
export type ControlMessage =
  /** A device tab asks the dashboards for the fleet's settings. */
  | { readonly type: 'hello'; readonly device: string }
  /** A dashboard's settings (the answer to `hello`, and every change). */
  | { readonly type: 'settings'; readonly settings: FleetSettings }
  /** A device tab has `device` open, on the host `instance` (posted about once a second). */
  | { readonly type: 'tab'; readonly device: string; readonly instance: string }

/** A channel every page of the demo in this browser opens. */
export interface ControlChannel {
  post(message: ControlMessage): void
  /** Calls `listener` with every message another page (or another object in this page) posted. */
  listen(listener: (message: ControlMessage) => void): () => void
  close(): void
}

/**
 * The platform `BroadcastChannel` under `name`; messages are structured-cloned.
 *
 * @example
 * const control = openControlChannel('tidemark-demo:control')
 * control.post({ type: 'hello', device: 'd03' })
 */
export function openControlChannel(name: string): ControlChannel {
  const channel = new BroadcastChannel(name)
  const listeners = new Set<(message: ControlMessage) => void>()
  channel.onmessage = (event: MessageEvent) => {
    const message: unknown = event.data
    if (!isControlMessage(message)) return
    for (const listener of listeners) listener(message)
  }
  return {
    post: (message) => channel.postMessage(message),
    listen(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    close: () => channel.close(),
  }
}

/**
 * A channel that goes nowhere: a dashboard with no other pages to talk to (tests, Node).
 *
 * @example
 * const fleet = new Fleet({ wiring, control: silentControlChannel })
 */
export const silentControlChannel: ControlChannel = {
  post() {},
  listen: () => () => {},
  close() {},
}

const TYPES = new Set(['hello', 'settings', 'tab'])

/** Another page's message is data from outside: the shape is checked before use. */
function isControlMessage(message: unknown): message is ControlMessage {
  if (typeof message !== 'object' || message === null) return false
  const { type } = message as { type?: unknown }
  if (typeof type !== 'string' || !TYPES.has(type)) return false
  const m = message as Record<string, unknown>
  switch (type) {
    case 'hello':
      return typeof m.device === 'string'
    case 'settings':
      return typeof m.settings === 'object' && m.settings !== null
    default:
      return typeof m.device === 'string' && typeof m.instance === 'string'
  }
}
