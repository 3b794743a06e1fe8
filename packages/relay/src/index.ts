/**
 * `@tidemark/relay`: the Tidemark sync relay. A Hocuspocus server that authorizes every update
 * per source before it is applied, stores rooms durably (PGlite embedded, or PostgreSQL), scales
 * out through Redis, and keeps a directory of each fleet's rooms. Run it as the
 * `tidemark-relay` command, or embed it with `startRelay`.
 *
 * @module @tidemark/relay
 */
export { DevTokenIssuer } from './auth/devTokenIssuer.ts'
export { MIN_SECRET_BYTES, TokenVerifier } from './auth/tokenVerifier.ts'
export { authorizeUpdate } from './authorize/authorizeUpdate.ts'
export { DIRECTORY_MAP, DIRECTORY_ORIGIN } from './directory/fleetDirectory.ts'
export { OpenRefused, Refusal, refusedPayload } from './protocol/refusal.ts'
export { stderrLog } from './relayLog.ts'
export { DEFAULT_LIMITS, DEFAULT_PERSISTENCE, isLoopback, resolveRelayOptions, queuedBytesFor, roomsPerSubjectFor } from './relayOptions.ts'
export { LIMIT_VARIABLES, RelayConfigError, relayOptionsFromEnv } from './relayOptionsFromEnv.ts'
export { classifyRoom, DIRECTORY_SEGMENT, directoryRoom, MAX_ROOM_NAME_LENGTH, roomPatternAdmits } from './rooms/roomName.ts'
export { startRelay } from './startRelay.ts'
export { openPglite } from './store/pgliteClient.ts'
export { openPostgres, type PostgresTimeouts } from './store/postgresClient.ts'

export { SourceGrant } from './auth/accessGrant.ts'
export type { AccessGrant, TokenClaims } from './auth/accessGrant.ts'
export type { TokenKey } from './auth/tokenVerifier.ts'
export type { StateNeed, UpdateVerdict, WriteGrant } from './authorize/authorizeUpdate.ts'
export type { OpenRefusalKind, RefusalKind, SocketCutKind, SocketRefusalKind, UpdateRefusalKind } from './protocol/refusal.ts'
export type { RelayLog, RelayLogLevel } from './relayLog.ts'
export type { RelayLimits, RelayOptions, RelayPersistence, RelayStoreOption, RelayTimers, ResolvedRelayOptions } from './relayOptions.ts'
export type { RoomKind } from './rooms/roomName.ts'
export type { Relay } from './startRelay.ts'
export type { SqlClient, SqlQueryable, SqlResult } from './store/sqlClient.ts'
