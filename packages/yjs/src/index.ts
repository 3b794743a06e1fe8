/**
 * `@tidemark/yjs`: replicates an engine's lattice state through a Yjs document. `bindDoc`
 * connects an engine to a `Y.Doc`; `BroadcastChannelProvider` syncs tabs with no server;
 * `connectWebsocket` syncs devices through a y-websocket server; the document schema and its
 * validation are exported for tools that read the document.
 *
 * @module @tidemark/yjs
 */
export { applyPeerUpdate } from './binding/applyPeerUpdate.ts'
export { bindDoc } from './binding/bindDoc.ts'
export { BroadcastChannelProvider, openBroadcastChannel } from './transport/broadcastChannelProvider.ts'
export { ConfigurationMismatchError, isConfigurationMismatchError } from './schema/configurationMismatchError.ts'
export { connectWebsocket } from './transport/connectWebsocket.ts'
export {
  DOC_SCHEMA,
  entryKind,
  META_NAME,
  metaValue,
  readClockEntry,
  readGroupEntry,
  readMeta,
  REPLICA_PREFIX,
  replicaArrayName,
  writeClockEntry,
  writeGroupEntry,
} from './schema/docEntry.ts'
export { jitterReconnects, jitterWindow } from './transport/reconnectJitter.ts'
export { SyncStatusTracker, syncStatusTracker } from './transport/syncStatusTracker.ts'

export type { BindDocOptions, DocBinding } from './binding/bindDoc.ts'
export type { DocEntry } from './schema/docEntry.ts'
export type { BroadcastChannelProviderOptions, OpenTabChannel, TabChannel } from './transport/broadcastChannelProvider.ts'
export type { ConnectWebsocketOptions, WebsocketConnection } from './transport/connectWebsocket.ts'
export type { JitteredProvider, ReconnectJitterOptions } from './transport/reconnectJitter.ts'
export type { PeerAwareness, RejectedUpdate, SyncProvider } from './transport/syncStatusTracker.ts'
