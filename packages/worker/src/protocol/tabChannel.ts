import type { BeatMessage, HostMessage, PageMessage, StealMessage } from './messages.ts'
import { PROTOCOL_VERSION } from './messages.ts'

/** Who a message on the tab channel is for: the host of an epoch, one tab, or every tab. */
export type Addressee = 'host' | '*' | (string & {})

/**
 * A message on the tab channel of leader mode (a BroadcastChannel every tab of the origin
 * shares): every tab gets every message, so each says whom it is for and which host's epoch it
 * belongs to. A page talks to the host of one epoch; a host answers only pages that address its
 * epoch, and every tab drops answers from another epoch's host (a thawed former leader).
 */
export interface ChannelEnvelope {
  readonly tidemark: 'worker'
  readonly v: number
  readonly to: Addressee
  readonly from: string
  readonly epoch: number
  readonly m: PageMessage | HostMessage | BeatMessage | StealMessage
}

/** The channel's name for the engine `name`. */
export function tabChannelName(name: string): string {
  return `tidemark-worker:${name}`
}

/** Wraps `m` for the channel. */
export function envelope(to: Addressee, from: string, epoch: number, m: ChannelEnvelope['m']): ChannelEnvelope {
  return { tidemark: 'worker', v: PROTOCOL_VERSION, to, from, epoch, m }
}

/** The envelope in `data`, or null for anything else on the channel (another version, another library). */
export function openEnvelope(data: unknown): ChannelEnvelope | null {
  if (typeof data !== 'object' || data === null) return null
  const e = data as Partial<ChannelEnvelope>
  if (e.tidemark !== 'worker' || e.v !== PROTOCOL_VERSION) return null
  if (typeof e.to !== 'string' || typeof e.from !== 'string' || typeof e.epoch !== 'number') return null
  if (typeof e.m !== 'object' || e.m === null || typeof (e.m as { t?: unknown }).t !== 'string') return null
  return e as ChannelEnvelope
}
