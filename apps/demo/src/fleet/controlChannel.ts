import type { DeviceStatus } from './deviceStatus.ts'
import type { FleetSettings } from './fleetSettings.ts'

/** What an operator can do to a device, wherever it runs. */
export type DeviceCommand = 'online' | 'offline' | 'crash' | 'pause' | 'resume'

/**
 * Messages between the pages of one browser: dashboards and `?device=` tabs. They carry
 * control and status only; readings and window state travel through the Yjs documents.
 */
export type ControlMessage =
  /** A device tab asks the dashboards for the fleet's settings. */
  | { readonly type: 'hello'; readonly device: string }
  /** A dashboard's settings (the answer to `hello`, and every change). */
  | { readonly type: 'settings'; readonly settings: FleetSettings }
  /** A tab wants to run `device`: whoever runs it closes it cleanly and lets its lock go. */
  | { readonly type: 'takeover'; readonly device: string; readonly epoch: string }
  /** An operator's command for `device` (`*`: every device). */
  | { readonly type: 'command'; readonly device: string; readonly command: DeviceCommand }
  /** A device's status, posted by the page that runs it, about once a second. */
  | { readonly type: 'status'; readonly status: DeviceStatus }

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

const TYPES = new Set(['hello', 'settings', 'takeover', 'command', 'status'])

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
    case 'takeover':
      return typeof m.device === 'string' && typeof m.epoch === 'string'
    case 'command':
      return typeof m.device === 'string' && typeof m.command === 'string'
    default:
      return typeof m.status === 'object' && m.status !== null && typeof (m.status as { id?: unknown }).id === 'string'
  }
}
