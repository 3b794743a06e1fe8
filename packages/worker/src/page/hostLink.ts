import type { PageMessage } from '../protocol/messages.ts'

/** How the page reaches one host: a port, its own worker, or the tab channel addressed to one epoch. */
export interface HostLink {
  send(message: PageMessage): void
  /** Stops listening to this host (and ends its worker when this tab owns it). */
  close(): void
}

/** What a connector tells the remote engine about hosts. */
export interface LinkSink {
  /** A new host can be reached through `link`: say hello. */
  opened(link: HostLink): void
  /** A message from the host behind `link`. */
  message(link: HostLink, data: unknown): void
  /** The host behind `link` went away (the connector looks for the next one). */
  lost(link: HostLink, reason: string): void
  /** No host can be reached, now or later (the worker script does not load). */
  failed(reason: string): void
}

/**
 * Finds the engine's host for one mode (a SharedWorker, a leader tab's worker, this tab's own
 * worker) and keeps finding the next one when it goes away.
 */
export interface HostConnector {
  start(sink: LinkSink): void
  /** The host behind `link` is gone (its lock was released, or it said it lost the log). */
  gone(link: HostLink): void
  stop(): void
}
