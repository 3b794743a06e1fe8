/**
 * `@tidemark/yjs/websocket`: `connectWebsocket`, a doc over a y-websocket server, kept apart from
 * the main entry (and its size) while the demo, the end-to-end tests and the storm pages still
 * run against the y-websocket sync server. It will be removed, with the y-websocket dependency;
 * `connectRelay` from `@tidemark/yjs` replaces it.
 *
 * @module @tidemark/yjs/websocket
 */
export { connectWebsocket } from './websocket/connectWebsocket.ts'
export { jitterReconnects } from './websocket/jitterReconnects.ts'

export type { ConnectWebsocketOptions, WebsocketConnection } from './websocket/connectWebsocket.ts'
export type { JitteredProvider } from './websocket/jitterReconnects.ts'
