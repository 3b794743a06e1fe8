/**
 * `@tidemark/yjs`: replicates an engine's lattice state through a Yjs document. `bindDoc`
 * connects an engine to a `Y.Doc`; `BroadcastChannelProvider` syncs tabs with no server;
 * `connectRelay` syncs devices and dashboards through a Tidemark relay, and `followRooms`
 * follows a fleet's rooms there; the document schema and its validation are exported for tools
 * that read the document.
 *
 * @module @tidemark/yjs
 */
export { applyPeerUpdate } from './binding/applyPeerUpdate.ts'
export { bindDoc } from './binding/bindDoc.ts'
export { BroadcastChannelProvider, openBroadcastChannel } from './transport/broadcastChannelProvider.ts'
export { ConfigurationMismatchError, isConfigurationMismatchError } from './schema/configurationMismatchError.ts'
export { connectRelay } from './relay/connectRelay.ts'
export { DIRECTORY_ROOMS, followRooms } from './relay/followRooms.ts'
export { REFILL_BOUND_MS } from './relay/refillGate.ts'
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
export { jitterWindow } from './transport/reconnectJitter.ts'
export { SyncStatusTracker, syncStatusTracker } from './transport/syncStatusTracker.ts'

export type { BindDocOptions } from './binding/bindDocOptions.ts'
export type { DocBinding } from './binding/docReplication.ts'
export type { DocEntry } from './schema/docEntry.ts'
export type { BroadcastChannelProviderOptions, OpenTabChannel, TabChannel } from './transport/broadcastChannelProvider.ts'
export type { ConnectRelayOptions, RelaySocket, RelayToken } from './relay/connectRelayOptions.ts'
export type { JoinOptions, Relay, RelayRoomHandle } from './relay/relayApi.ts'
export type { FollowRoomsOptions, RefillOptions, RoomFollower } from './relay/followRooms.ts'
export type { RefillReport } from './relay/refillGate.ts'
export type { ReconnectJitterOptions } from './transport/reconnectJitter.ts'
export type { ConnectionFacts, PeerAwareness, RejectedUpdate, SyncProvider, TrackedConnection } from './transport/syncStatusTracker.ts'
