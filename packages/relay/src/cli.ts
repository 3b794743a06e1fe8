#!/usr/bin/env node
/**
 * `tidemark-relay`: the relay as a command, configured by environment variables
 * (`relayOptionsFromEnv`). Once listening it prints one line to stdout,
 *
 *   tidemark-relay ready {"host":"127.0.0.1","port":1234,"pid":4242}
 *
 * Logs go to stderr. SIGTERM or SIGINT stores every loaded room, closes the connections with
 * the reason `tidemark:shutdown` and exits 0 (1 when updates could not be stored). Exit code 2:
 * bad configuration, with a message naming the variable; 1: the relay could not start.
 */
import { describeError } from './relayLog.ts'
import { RelayConfigError, relayOptionsFromEnv } from './relayOptionsFromEnv.ts'
import { openStore } from './store/openStore.ts'
import type { SqlClient } from './store/sqlClient.ts'

async function main(): Promise<void> {
  let options: ReturnType<typeof relayOptionsFromEnv>
  try {
    options = relayOptionsFromEnv(process.env)
  } catch (error) {
    if (error instanceof RelayConfigError) {
      process.stderr.write(`tidemark-relay: bad configuration: ${error.message}\n`)
      process.exit(2)
    }
    throw error
  }
  // The store opens (PGlite compiles its WebAssembly on its own thread, PostgreSQL connects)
  // while the relay's modules load: each takes half a second to a second.
  const opening = openStore(options.store, options.log)
  // Read once the modules are loaded; a failure is reported then.
  opening.catch(() => undefined)
  const { startRelay } = await import('./startRelay.ts')
  let relay: Awaited<ReturnType<typeof startRelay>>
  try {
    const sql: SqlClient = await opening
    relay = await startRelay({ ...options, store: { sql }, guardProcess: true })
  } catch (error) {
    process.stderr.write(`tidemark-relay: could not start: ${describeError(error)}\n`)
    process.exit(1)
  }
  process.stdout.write(`tidemark-relay ready ${JSON.stringify({ host: relay.host, port: relay.port, pid: process.pid })}\n`)
  let stopping = false
  const stop = (signal: string): void => {
    if (stopping) return
    stopping = true
    process.stderr.write(`tidemark-relay: ${signal}: storing rooms and closing\n`)
    relay.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`tidemark-relay: ${describeError(error)}\n`)
        process.exit(1)
      },
    )
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}

await main()
