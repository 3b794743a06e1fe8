/**
 * A fleet of three devices uploads readings: late, duplicated, out of order, and one
 * device reconnects after being offline with a backlog. Prints what a dashboard would
 * get: on-time results, corrections (with the value they replace) and the late lane.
 *
 *   pnpm example
 */
import {
  boundedOutOfOrderness,
  createEngine,
  type StreamEvent,
  tumbling,
  type WindowChange,
  type WindowResult,
} from '@tidemark/engine'

const MINUTE = 60_000
const T0 = Date.UTC(2026, 10, 29, 8, 0, 0)
// Processing time starts with the fleet: an event stamped more than a day ahead of it would be refused (`future_ts`).
const clock = { now: T0 }

const engine = createEngine({
  windows: tumbling(MINUTE),
  watermark: boundedOutOfOrderness(10_000),
  allowedLateness: 2 * MINUTE,
  idleTimeout: 30_000,
  retention: 10 * MINUTE,
  now: () => clock.now,
})

const hhmm = (t: number) => new Date(t).toISOString().slice(11, 16)
const show = (r: WindowResult) =>
  `${r.key.padEnd(6)} ${hhmm(r.start)}–${hhmm(r.end)}  count ${String(r.count).padStart(2)}  mean ${r.mean.toFixed(1).padStart(5)}  [${r.basis}${r.final ? ', final' : ''}]`

// Changes arrive synchronously, inside ingest(); they are kept and printed under the summary of the batch that caused them.
const changeLines: string[] = []
engine.subscribe((changes: readonly WindowChange[]) => {
  for (const c of changes) {
    if (c.type === 'on_time') changeLines.push(`  on time     ${show(c.result)}`)
    else if (c.type === 'correction') {
      const was = c.previous ? ` (was count ${c.previous.count}, mean ${c.previous.mean.toFixed(1)})` : ''
      changeLines.push(`  correction  ${show(c.result)} rev ${c.result.revision}${was}`)
    } else if (c.type === 'retract') changeLines.push(`  retract     ${show(c.result)}`)
  }
})

const seqs = new Map<string, number>()
function reading(source: string, minute: number, second: number, value: number, key = 'temp'): StreamEvent {
  const seq = (seqs.get(source) ?? 0) + 1
  seqs.set(source, seq)
  return { id: `${source}-${seq}`, source, seq, ts: T0 + minute * MINUTE + second * 1000, key, value }
}

function upload(label: string, events: readonly StreamEvent[], advanceClockMs = 5_000) {
  clock.now += advanceClockMs
  const r = engine.ingest(events)
  console.log(
    `${label}: ${events.length} events → accepted ${r.accepted} (late ${r.late}), duplicates ${r.duplicates}, beyond lateness ${r.beyondLateness}, rejected ${r.rejected}`,
  )
  for (const a of r.anomalies) console.log(`  anomaly ${a.reason} at #${a.index}: ${a.detail}`)
  for (const line of changeLines.splice(0)) console.log(line)
}

// Device c goes offline after its first reading; its readings are kept for later.
const backlog: StreamEvent[] = []
upload('minute 0', [reading('a', 0, 5, 20), reading('b', 0, 9, 22), reading('c', 0, 12, 21)])
for (let m = 0; m < 4; m++) backlog.push(reading('c', m, 40, 30 + m))

const a1 = reading('a', 1, 2, 21)
upload('minute 1', [reading('b', 1, 30, 23), a1, reading('a', 0, 50, 19), a1 /* re-sent */])
upload('minute 2', [reading('a', 2, 15, 22), reading('b', 2, 20, 24)])
upload('bad input', [
  { id: 'x1', source: 'b', ts: Number.NaN, value: 1 },
  { id: '', source: 'b', ts: T0, value: 1 },
  { id: 'x3', source: 'b', ts: T0, value: Number.POSITIVE_INFINITY },
])
// c has been silent for > idleTimeout: it stops holding the watermark back (basis 'fallback').
clock.now += 40_000
upload('minute 3', [reading('a', 3, 30, 23), reading('b', 3, 40, 25), reading('a', 4, 20, 23), reading('b', 4, 25, 25)])
upload('minute 5', [reading('a', 5, 30, 23), reading('b', 5, 40, 25)])
console.log('device c reconnects with its backlog:')
upload('backlog', backlog)
upload('minute 6', [reading('a', 6, 30, 24), reading('b', 6, 40, 26), reading('c', 6, 45, 27)])

console.log('\nlate lane (refused as beyond lateness):')
for (const late of engine.lateEvents()) console.log(`  ${late.event.id} at ${hhmm(late.event.ts)} for ${late.window}: ${late.reason}`)
const s = engine.stats()
console.log(
  `\nstats: ingested ${s.ingested}, applied ${s.applied}, duplicates ${s.duplicates}, late admitted ${s.lateAdmitted}, beyond lateness ${s.beyondLateness}, corrections ${s.corrections}, watermark ${hhmm(s.watermark)}`,
)
await engine.close()
