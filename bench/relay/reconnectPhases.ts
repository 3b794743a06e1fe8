/**
 * The reconnect phases of `pnpm bench:relay`, after the steady phase: every device socket
 * dropped at once, then relay A restarted. Each is timed from the disruption until the last
 * device is back in sync and until every dashboard converged on what the devices sent.
 */
import { type BenchFlags, STORE_NAMES } from './benchFlags.ts'
import type { ReconnectRun } from './relayBenchResult.ts'
import { pause, type RelayRig, scrape } from './relayRig.ts'

/** What the reconnect phases measured (arrivals filled in by the run), and relay A's metrics just before its restart. */
export interface ReconnectRuns {
  readonly reconnects: ReconnectRun[]
  /** What the first relay A counted (its refusals) before it stopped: its successor starts from zero. */
  readonly beforeRestart: Map<string, number>
}

/**
 * Runs both reconnect phases on the rig; replaces `rig.a` with the restarted relay A.
 *
 * @example
 * const { reconnects, beforeRestart } = await measureReconnects(rig, flags)
 */
export async function measureReconnects(rig: RelayRig, flags: BenchFlags): Promise<ReconnectRuns> {
  const { sim, dash, say } = rig
  const spreadSeconds = flags.reconnectSpreadMs / 1000
  const deviceCount = flags.layout.fleets * flags.layout.devicesPerFleet
  const reconnects: ReconnectRun[] = []
  say('')
  say(`reconnect 1: every device socket dropped at once; each device reconnects at a uniform random time within ${spreadSeconds} s`)
  dash.send({ type: 'phase', name: 'disrupted-drop' })
  sim.send({ type: 'drop', spreadMs: flags.reconnectSpreadMs })
  const dropResync = (await sim.next('resynced', 180_000)).resync
  dash.send({ type: 'converge', resync: dropResync, timeoutMs: 60_000 })
  const dropConvergence = (await dash.next('converged', 120_000)).convergence
  reconnects.push({
    name: 'device sockets dropped',
    description: `all ${deviceCount} device sockets closed at once, each reconnecting at a uniform random time within ${spreadSeconds} s; readings recorded meanwhile sent on reconnect`,
    convergence: dropConvergence,
    lastResyncMs: dropResync.lastResyncMs,
    devicesMissing: dropResync.missing.length,
    relayDowntimeMs: null,
    arrivals: null,
  })
  say(`  last device back in sync after ${(dropResync.lastResyncMs / 1000).toFixed(2)} s; every dashboard converged after ${(dropConvergence.ms / 1000).toFixed(2)} s (pending pairs: ${dropConvergence.pending})`)
  dash.send({ type: 'phase', name: 'after drop' })
  await pause(20_000)

  say(`reconnect 2: relay A restarted (SIGTERM, then a new process on the same port and ${STORE_NAMES[flags.store]}); devices reconnect on their own jitter (base 0.5 s, cap ${spreadSeconds} s)`)
  dash.send({ type: 'phase', name: 'disrupted-restart' })
  const at = Date.now()
  sim.send({ type: 'watch-resync', at, timeoutMs: 180_000 })
  await pause(200)
  const stopped = rig.a
  rig.earlierA.push(stopped)
  const beforeRestart = await scrape(rig, stopped, new Map())
  const exit = await stopped.stop('SIGTERM')
  rig.a = await rig.respawnA('A-restarted')
  const downtime = Date.now() - at
  const restartResync = (await sim.next('resynced', 240_000)).resync
  dash.send({ type: 'converge', resync: restartResync, timeoutMs: 60_000 })
  const restartConvergence = (await dash.next('converged', 120_000)).convergence
  reconnects.push({
    name: 'relay A restarted',
    description: `SIGTERM to relay A (it stores every room and closes every socket), a new A on the same port and ${STORE_NAMES[flags.store]} (down ${(downtime / 1000).toFixed(1)} s); devices reconnect with their jitter (uniform within min(${spreadSeconds} s, 0.5 s × 2^attempt))`,
    convergence: restartConvergence,
    lastResyncMs: restartResync.lastResyncMs,
    devicesMissing: restartResync.missing.length,
    relayDowntimeMs: downtime,
    arrivals: null,
  })
  say(`  relay A exited ${exit.code ?? exit.signal}, new A ready after ${(downtime / 1000).toFixed(1)} s; last device back in sync after ${(restartResync.lastResyncMs / 1000).toFixed(2)} s; every dashboard converged after ${(restartConvergence.ms / 1000).toFixed(2)} s (pending pairs: ${restartConvergence.pending})`)
  dash.send({ type: 'phase', name: 'after restart' })
  await pause(10_000)
  return { reconnects, beforeRestart }
}
