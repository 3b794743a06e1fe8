/**
 * Renders a relay benchmark run (relayBenchResult.ts) as the Markdown of
 * `bench/results/relay-latest.md`: the headline table with its targets, then the per-minute
 * samples, CPU per process, the reconnects, the store and the run's health.
 */
import type { MinuteRow, RelayBenchResult } from './relayBenchResult.ts'

/** Target of the steady-state device→dashboard latency, p99. */
export const LATENCY_P99_TARGET_MS = 100
/** Target of a reconnect: every dashboard converged within this long of the disruption. */
export const CONVERGENCE_TARGET_MS = 10_000
/** RSS counts as flat when its least-squares slope over the steady phase is at most this (a leak grows; memory handed back is no leak). */
export const RSS_FLAT_MB_PER_MINUTE = 1

const mark = (ok: boolean): string => (ok ? '✓' : '✗')
const int = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–')
const fixed = (n: number, digits: number): string => (Number.isFinite(n) ? n.toFixed(digits) : '–')
const kb = (bytes: number): string => `${fixed(bytes / 1024, 1)} KiB`

/**
 * The Markdown report of a run.
 *
 * @example
 * writeFileSync('bench/results/relay-latest.md', renderRelayReport(result))
 */
export function renderRelayReport(r: RelayBenchResult): string {
  const { layout, steady } = r
  const shared = r.store === 'postgres'
  // Records taken before the bench read the dashboards' event-loop delay render as they were.
  const dashboardsDelay = r.steady.minutes.some((m) => m.loopDelayMs.dashboards !== undefined)
  const devices = layout.fleets * layout.devicesPerFleet
  const dashboards = layout.fleets * layout.dashboardsPerFleet
  const lines: string[] = []
  const push = (...more: string[]): void => {
    lines.push(...more)
  }
  const p99 = steady.arrivals.latency.p99
  const cpuA = steady.cpu.find((c) => c.name === 'relay A')
  const cpuB = steady.cpu.find((c) => c.name === 'relay B')
  const sim = steady.cpu.find((c) => c.name === 'device simulator')
  const database = steady.cpu.find((c) => c.name === 'postgres')
  const topologyStore = shared
    ? 'both relays are the `tidemark-relay` command on **one PostgreSQL database** (`DATABASE_URL`, a server started for the run), as the relay\'s README recommends for scale-out'
    : 'each relay is the `tidemark-relay` command with its own PGlite store'
  push(
    '# Relay benchmark: latest run',
    '',
    `${r.startedAt.slice(0, 16).replace('T', ' ')} UTC · Node ${r.node} · ${r.cpu} · load average (1 min) ${r.load.start} at start → ${r.load.end} at end, max ${r.load.max} · ${Math.round(r.seconds / 60)} min in all · \`pnpm bench:relay --minutes=${r.minutes}${shared ? ' --store=postgres' : ''}\``,
    '',
    `**The machine** (/proc/stat over the steady phase, in % of one core, ${steady.machine.cores} cores = ${100 * steady.machine.cores}%): busy ${fixed(steady.machine.busyPercent, 0)}%, of which **${fixed(steady.machine.othersPercent, 0)}% by processes outside this run** (other work sharing the machine); iowait ${fixed(steady.machine.iowaitPercent, 0)}%, steal ${fixed(steady.machine.stealPercent, 0)}%. Every figure below competed for the cores with that.`,
    '',
    `**Topology**: ${layout.fleets} fleets × ${layout.devicesPerFleet} devices = ${int(devices)} devices, **each device its own room \`<fleet>/<device>\`** (${int(devices)} rooms), all on **relay A**; ` +
      `${dashboards} dashboards (${layout.dashboardsPerFleet} per fleet) on **relay B**, each following its fleet's directory \`<fleet>/_directory\` and its ${layout.devicesPerFleet} rooms over one socket, with a real engine bound read-only (\`followRooms\`). ` +
      `A and B share rooms through Redis; ${topologyStore}. Everything runs on this machine, over 127.0.0.1, with other work on the same cores (see the load average).`,
    '',
    `**Traffic**: ${layout.updatesPerSecond} update/s per device (${int(devices * layout.updatesPerSecond)} updates/s in all), each one batch of 3 readings (temp, humidity, battery) ingested by the device's own engine and written through \`bindDoc\` into its \`Y.Doc\` (mean ${int(r.updateBytes)} bytes per update); every update passes the relay's per-source authorization. Each update reaches ${layout.dashboardsPerFleet} dashboards.`,
    '',
    '| measure | result | target |',
    '| --- | --- | --- |',
    `| device → dashboard latency, steady (${int(steady.arrivals.latency.count)} samples, ${fixed(steady.seconds / 60, 1)} min) | p50 **${steady.arrivals.latency.p50} ms**, p90 ${steady.arrivals.latency.p90} ms, p99 **${p99} ms**, max ${steady.arrivals.latency.max} ms | p99 < ${LATENCY_P99_TARGET_MS} ms ${mark(p99 < LATENCY_P99_TARGET_MS)} |`,
    `| relay CPU per 1,000 updates | A **${fixed(steady.cpuPerThousand.A, 0)} ms**, B **${fixed(steady.cpuPerThousand.B, 0)} ms**, total **${fixed(steady.cpuPerThousand.total, 0)} ms** (A ${fixed(cpuA?.percentOfCore ?? Number.NaN, 1)}% + B ${fixed(cpuB?.percentOfCore ?? Number.NaN, 1)}% of one core at ${fixed(steady.updates / steady.seconds, 0)} updates/s)${database === undefined ? '' : `; the PostgreSQL server both write to ${fixed((1000 * database.cpuMs) / steady.updates, 0)} ms (${fixed(database.percentOfCore, 1)}% of one core)`} | – |`,
    `| relay RSS over the steady phase, after a ${fixed(r.warmupSeconds / 60, 1)}-min warm-up that fills the devices' live state (slope of the least-squares line through a sample every 10 s; at start, before any client: A ${r.relayRssMb.atStart.A} MB, B ${r.relayRssMb.atStart.B} MB) | A ${rssRange(r, 1)}, slope **${fixed(steady.rssSlopeMbPerMinute.A, 2)} MB/min** (second half ${fixed(steady.rssSlopeSecondHalf.A, 2)}); B ${rssRange(r, 2)}, slope **${fixed(steady.rssSlopeMbPerMinute.B, 2)} MB/min** (second half ${fixed(steady.rssSlopeSecondHalf.B, 2)})${steady.outsideHeapSlope === undefined ? '' : `; of it outside the JS heap (RSS − V8 heap size, a sample a minute): slope A ${fixed(steady.outsideHeapSlope.A, 2)}, B ${fixed(steady.outsideHeapSlope.B, 2)} MB/min`} | flat: growth ≤ ${RSS_FLAT_MB_PER_MINUTE} MB/min ${mark(steady.rssSlopeMbPerMinute.A <= RSS_FLAT_MB_PER_MINUTE && steady.rssSlopeMbPerMinute.B <= RSS_FLAT_MB_PER_MINUTE)} |`,
  )
  if (steady.relayedB !== undefined) {
    push(
      `| changes of relay A that relay B received through Redis over the steady phase (B's \`tidemark_relay_relayed_confirmed_total\` / \`tidemark_relay_relayed_written_total\`) | **${int(steady.relayedB.confirmed)}** dropped as stored by A, **${int(steady.relayedB.written)}** written by B itself (held, A not having said it stored them in time)${shared ? '' : "; on a PGlite store of its own B writes every change of A as a copy (merged per room, within ten write windows), which neither counter counts"} | – |`,
    )
  }
  push(
    `| timers and rooms loaded over the steady phase (first → last minute, from \`/metrics\`) | timers A ${span(steady.minutes, (m) => m.timers.A)}, B ${span(steady.minutes, (m) => m.timers.B)}; rooms A ${span(steady.minutes, (m) => m.roomsLoaded.A)}, B ${span(steady.minutes, (m) => m.roomsLoaded.B)} | flat (mean of the last third within 10% of the first third's): none leaked ${mark(flat(steady.minutes, (m) => m.timers.A) && flat(steady.minutes, (m) => m.timers.B) && flat(steady.minutes, (m) => m.roomsLoaded.A) && flat(steady.minutes, (m) => m.roomsLoaded.B))} |`,
  )
  for (const run of r.reconnects) {
    push(
      `| reconnect: ${run.name} | every dashboard converged after **${fixed(run.convergence.ms / 1000, 2)} s** (last device back in sync after ${fixed(run.lastResyncMs / 1000, 2)} s${run.relayDowntimeMs === null ? '' : `; A down ${fixed(run.relayDowntimeMs / 1000, 1)} s`}) | < ${CONVERGENCE_TARGET_MS / 1000} s ${mark(run.convergence.ms < CONVERGENCE_TARGET_MS)} |`,
    )
  }
  if (r.storage !== null) {
    const s = r.storage
    push(
      `| stored bytes per device room after compaction${shared ? ' (the shared database)' : ''} | **${kb(s.storedMean)}** mean (max ${kb(s.storedMax)}; snapshot ${kb(s.snapshotMean)} + ${fixed(s.rowsMean, 1)} update rows) vs **${kb(s.rawMean)}** of raw updates per room (${int(s.updatesPerRoomMean)} updates): **${fixed((100 * s.storedMean) / s.rawMean, 2)}%** | – |`,
    )
  }
  push(
    `| device simulator CPU share | ${fixed(sim?.percentOfCore ?? Number.NaN, 1)}% of one core: **${fixed(100 * steady.simulatorShare.ofRelays, 0)}% of the two relays' CPU**, ${fixed(100 * steady.simulatorShare.ofAll, 0)}% of all the run's processes; send lag against its schedule over the whole run (connect and warm-up included) p50 ${steady.sendLag.p50} ms, p99 ${steady.sendLag.p99} ms | not the bottleneck |`,
    '',
  )

  push(
    r.relayRssMb.afterInit === null
      ? `Relays start on an empty PostgreSQL database (its server started for the run, \`fsync\` off), so no data directory is initialized first; at start A holds ${r.relayRssMb.atStart.A} MB, B ${r.relayRssMb.atStart.B} MB.`
      : `Relays start on a PGlite directory initialized by an earlier relay run, as a relay deployed before does: a relay that has just initialized a new directory holds about ${r.relayRssMb.afterInit} MB (WebAssembly memory grown by PostgreSQL's initdb is not returned), against ${r.relayRssMb.atStart.A} MB when it opens an initialized one.`,
    '',
    '## Steady phase, minute by minute',
    '',
    `Latency of the readings that reached a dashboard's engine in that minute; CPU as a percentage of one core (the machine has ${r.cpu.split('×').pop()?.trim()}); RSS read from /proc; heap in use (garbage not yet collected included), the event loop's delay over the minute (how long an arriving update could wait behind other work), timers, rooms loaded and stored bytes from the relays' \`/metrics\` (stored bytes are re-read from the database once a minute)${dashboardsDelay ? "; the dashboards' event-loop delay is their one process's (the twenty dashboards share its loop, so an update may wait behind the others' merges: that wait is part of the latency)" : ''}.`,
    '',
    `| minute | load | latency p50 / p99 / max ms | coalesced | updates/s (A) | CPU A | CPU B | CPU redis | ${shared ? 'CPU postgres | ' : ''}CPU simulator | CPU dashboards | CPU other processes | RSS A MB | RSS B MB | heap used A / B MB | event-loop delay p99 / max ms, A · B${dashboardsDelay ? ' · dashboards' : ''} | timers A / B | rooms A / B | ${shared ? 'stored in the shared database' : 'stored on A'} |`,
    `| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ${shared ? '---: | ' : ''}---: | ---: | ---: | ---: | ---: | --- | --- | --- | ---: |`,
  )
  for (const m of steady.minutes) {
    const c = m.cpuPercent
    push(
      `| ${fixed(m.minute, 1)} | ${fixed(m.load, 2)} | ${m.latency.p50} / ${m.latency.p99} / ${m.latency.max} | ${m.coalesced} | ${fixed(m.updatesPerSecond, 0)} | ${c['relay A']}% | ${c['relay B']}% | ${c.redis}% | ${shared ? `${c.postgres}% | ` : ''}${c['device simulator']}% | ${c.dashboards}% | ${c['other processes']}% | ${m.rssMb.A} | ${m.rssMb.B} | ${m.heapUsedMb.A} / ${m.heapUsedMb.B} | ${m.loopDelayMs.A.p99} / ${m.loopDelayMs.A.max} · ${m.loopDelayMs.B.p99} / ${m.loopDelayMs.B.max}${dashboardsDelay ? ` · ${m.loopDelayMs.dashboards?.p99 ?? '–'} / ${m.loopDelayMs.dashboards?.max ?? '–'}` : ''} | ${m.timers.A} / ${m.timers.B} | ${m.roomsLoaded.A} / ${m.roomsLoaded.B} | ${fixed(m.storedBytesA / 1e6, 2)} MB |`,
    )
  }
  push(
    '',
    `Latency samples: ${int(steady.arrivals.latency.count)} (one per update and dashboard; expected ${int(steady.expectedArrivals)} from what the devices sent). ${int(steady.arrivals.coalesced)} of ${int(steady.arrivals.arrivals)} merges brought several updates of a device at once: the clock carries the newest one's \`ts\` only, so the older ones count as its latency plus one send period each. Relay B sent ${int(steady.updatesOutB)} updates to connections over the phase (${fixed(steady.updatesOutB / steady.seconds, 0)}/s). Redis processed ${fixed(steady.redis.commandsPerUpdate, 2)} commands per device update (${fixed(steady.redis.bytesInPerUpdate, 0)} bytes in, ${fixed(steady.redis.bytesOutPerUpdate, 0)} bytes out).`,
    '',
    '## CPU over the steady phase',
    '',
    '| process | CPU s | % of one core | ms per 1,000 updates | RSS at the end MB |',
    '| --- | ---: | ---: | ---: | ---: |',
  )
  for (const c of steady.cpu) push(`| ${c.name} | ${fixed(c.cpuMs / 1000, 1)} | ${fixed(c.percentOfCore, 1)}% | ${fixed((1000 * c.cpuMs) / steady.updates, 0)} | ${fixed(c.rssMb, 0)} |`)
  push('')

  if (r.reconnects.length > 0) {
    push('## Reconnects', '', '"Converged": every dashboard\'s engine shows, for every device of its fleet, every reading that device had recorded when it was back in sync (readings recorded while offline included). Time from the disruption.', '')
    push('| scenario | what happened | devices back in sync | dashboards converged | per dashboard (min – max) | backlog latency p50 / p99 / max |', '| --- | --- | ---: | ---: | --- | --- |')
    for (const run of r.reconnects) {
      const per = run.convergence.perDashboardMs.filter(Number.isFinite)
      const lat = run.arrivals?.latency
      push(
        `| ${run.name} | ${run.description} | ${fixed(run.lastResyncMs / 1000, 2)} s${run.devicesMissing > 0 ? ` (${run.devicesMissing} missing)` : ''} | ${fixed(run.convergence.ms / 1000, 2)} s${run.convergence.pending > 0 ? ` (${run.convergence.pending} pairs pending)` : ''} | ${fixed(Math.min(...per) / 1000, 2)} – ${fixed(Math.max(...per) / 1000, 2)} s | ${lat === undefined ? '–' : `${lat.p50} / ${lat.p99} / ${lat.max} ms`} |`,
      )
    }
    push('')
  }

  if (r.storage !== null) {
    const s = r.storage
    push(
      '## Store',
      '',
      `After the devices left, relay A unloaded their rooms once idle (compacting each: snapshot, rows folded and deleted; ${s.roomsLoadedAtStop} rooms still loaded when it stopped), then ${shared ? 'the PostgreSQL database both relays write (the sizes are the database\'s, not A\'s share of it)' : 'its PGlite directory'} was read per room. ${s.rooms} device rooms: stored ${kb(s.storedMean)} mean, ${kb(s.storedMax)} max, against ${kb(s.rawMean)} of updates sent per room over the run (${int(s.updatesPerRoomMean)} updates of ${int(r.updateBytes)} bytes). A device's document holds its live cells only (the engine retires a minute's cells after its lateness and retention), so the snapshot stays the size of its live state however long the device runs.`,
      '',
    )
  }

  const h = r.health
  const refusals = Object.entries(h.relayRefusals)
  push(
    '## Health',
    '',
    `- device clients: ${h.deviceRefusals} refused rooms, ${h.deviceErrors} errors, ${h.deviceAnomalies} rejected readings; dashboards: ${h.dashboardRefusals} refusals, ${h.dashboardErrors} errors, ${h.dashboardEngineAnomalies} remote-cell anomalies`,
    `- relay refusals: ${refusals.length === 0 ? 'none' : refusals.map(([k, v]) => `${k} = ${v}`).join(', ')}; unhandled rejections: ${h.relayUnhandledRejections}`,
    `- relay exits: ${Object.entries(h.relayExits)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  )
  for (const [relay, warnings] of Object.entries(h.relayWarnings)) {
    push(`- relay ${relay} stderr: ${warnings.length === 0 ? 'nothing' : `${warnings.length} line(s), first: \`${(warnings[0] ?? '').slice(0, 200).replace(/`/g, "'")}\``}`)
  }
  push(
    '',
    '## How it is measured',
    '',
    "- **Latency**: each update's readings carry `ts = Date.now()` taken when the device records them, and the binding writes them into the device's doc at once, so `ts` is the send time. Each dashboard engine's replica port is observed around `mergeRemoteGroups`: when a merge moves a device's gap-free prefix forward, and `engine.nextSeq(device)` confirms the engine has it (its subscribers were notified in that call), the sample is `Date.now() - prefixTs` (the newest reading's ts). Same machine, same clock; resolution 1 ms.",
    `- **CPU**: user + system time of each process from /proc (all threads), over the steady phase; per 1,000 updates = CPU / (updates relay A accepted / 1,000). Relay B's CPU is the fan-out: it applies each update from Redis and sends it to the fleet's dashboards.${shared ? " PostgreSQL's is its server process's with that of every backend it forked for a connection (running or exited); its RSS is the server process's own." : ''}`,
    `- **RSS**: /proc VmRSS of each relay every 10 s, from the end of a ${fixed(r.warmupSeconds / 60, 1)}-min warm-up: a device's document holds a window's cells until its end + allowed lateness + retention (12 min with the fleet's options), so until the live state is full memory grows with the data, not with a leak. The slope is the least-squares line through the samples. Timers (\`nodejs_active_resources{type="Timeout"}\`) and rooms loaded are read per minute: a leaked room or timer shows as a count that grows, a leaked document as a rising RSS.`,
    '- **Reconnects**: the simulator records every device\'s last seq when its room is in sync again; the dashboards log when their engines reach it. Readings keep being recorded at 1/s throughout.',
    '- **The simulator** runs a real engine, doc and relay client per device (one socket each), in one process at nice 10, so that on this shared machine the relays, Redis and the dashboards are served first, as when devices run elsewhere; its send lag is how late its timers fired against the schedule.',
    '',
  )
  return lines.join('\n')
}

function rssRange(r: RelayBenchResult, column: 1 | 2): string {
  const values = r.steady.rssSeries.map((sample) => sample[column])
  if (values.length === 0) return '–'
  return `${fixed(Math.min(...values), 0)}–${fixed(Math.max(...values), 0)} MB`
}

/** First → last value of a per-minute series. */
function span(rows: readonly MinuteRow[], value: (row: MinuteRow) => number): string {
  if (rows.length === 0) return '–'
  return `${int(value(rows[0] as MinuteRow))} → ${int(value(rows[rows.length - 1] as MinuteRow))}`
}

/**
 * Whether a per-minute count held steady: the mean of its last third is within 10% (plus 2) of
 * the mean of its first third. Timers come and go with debounced writes; a leak only climbs.
 */
function flat(rows: readonly MinuteRow[], value: (row: MinuteRow) => number): boolean {
  const third = Math.max(1, Math.floor(rows.length / 3))
  if (rows.length < 2) return false
  const mean = (part: readonly MinuteRow[]): number => part.reduce((n, row) => n + value(row), 0) / part.length
  return mean(rows.slice(-third)) <= mean(rows.slice(0, third)) * 1.1 + 2
}
