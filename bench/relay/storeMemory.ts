/**
 * The relay's PGlite store alone under a fleet's steady writes: does its memory grow? A relay's
 * RSS holds its JS heap and PGlite's (a WebAssembly instance on its own thread, whose memory
 * never shrinks); this probe runs the room store without the relay, appending random update
 * bytes to every room at a steady rate (compacted at the relay's default thresholds, from a
 * fixed snapshot as a loaded room's document would give), and samples the process's RSS minus
 * the JS heap's size: memory outside the JS heap, which here is PGlite's.
 *
 *   node --import tsx --conditions=@tidemark/source bench/relay/storeMemory.ts --minutes=12 --rate=1000 --rooms=1000
 *
 * Prints a row every 30 s and, after a 3-minute warm-up (PGlite's buffers fill), the
 * least-squares slope of that memory in MB per minute; `--out=<file>` also writes the rows and
 * the slope as Markdown.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { RelayMetrics } from '../../packages/relay/src/metrics/relayMetrics.ts'
import { DEFAULT_PERSISTENCE } from '../../packages/relay/src/relayOptions.ts'
import { openPglite } from '../../packages/relay/src/store/pgliteClient.ts'
import { RoomStore } from '../../packages/relay/src/store/roomStore.ts'
import { leastSquaresSlope } from './leastSquaresSlope.ts'

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '12' },
    rate: { type: 'string', default: '1000' },
    rooms: { type: 'string', default: '1000' },
    out: { type: 'string' },
  },
})
const minutes = Number(values.minutes)
const rate = Number(values.rate)
const roomCount = Number(values.rooms)
if (!(minutes > 3) || !(rate > 0) || !Number.isInteger(roomCount) || roomCount < 1) {
  throw new Error(`--minutes must be above 3 (the warm-up), --rate above 0, --rooms a positive integer; got ${minutes}, ${rate}, ${roomCount}`)
}

/** PGlite's buffers fill in the first minutes: the slope is taken after. */
const WARMUP_MINUTES = 3
const SAMPLE_MS = 30_000
/** Updates are appended in bursts this often. */
const TICK_MS = 100
/** A device update's size, as a fleet's readings make them: 90–129 bytes. */
const updateBytes = (n: number): number => 90 + (n % 40)

const dir = mkdtempSync(join(tmpdir(), 'tidemark-store-memory-'))
const warnings: string[] = []
const store = await RoomStore.open(await openPglite(dir), DEFAULT_PERSISTENCE, new RelayMetrics(), (level, message) => {
  if (level !== 'info') warnings.push(message)
})
// Compaction snapshots a loaded room's document; a fixed state of a device room's size stands in for it.
const snapshot = randomBytes(600)
store.roomState = () => snapshot
const rooms = Array.from({ length: roomCount }, (_, i) => `fleet-${i % 10}/d${i}`)
for (const room of rooms) await store.load(room)

const mb = (bytes: number): number => Number((bytes / 2 ** 20).toFixed(1))
interface Sample {
  readonly minute: number
  readonly updates: number
  readonly rssMb: number
  readonly heapTotalMb: number
  readonly outsideHeapMb: number
  readonly storedMb: number
}
const samples: Sample[] = []
const start = Date.now()
let updates = 0

async function sample(): Promise<void> {
  const memory = process.memoryUsage()
  const row: Sample = {
    minute: Number(((Date.now() - start) / 60_000).toFixed(2)),
    updates,
    rssMb: mb(memory.rss),
    heapTotalMb: mb(memory.heapTotal),
    outsideHeapMb: mb(memory.rss - memory.heapTotal),
    storedMb: mb(await store.storedBytes()),
  }
  samples.push(row)
  console.log(`${row.minute.toFixed(2)} min  ${row.updates} updates  RSS ${row.rssMb} MB  JS heap ${row.heapTotalMb} MB  outside it ${row.outsideHeapMb} MB  stored ${row.storedMb} MB`)
}

console.log(`store memory: ${roomCount} rooms, ${rate} updates/s, ${minutes} min, PGlite in ${dir}`)
await sample()
let next = start + SAMPLE_MS
while (Date.now() - start < minutes * 60_000) {
  for (let i = 0; i < (rate * TICK_MS) / 1000; i++) {
    store.append(rooms[updates % roomCount] as string, randomBytes(updateBytes(updates)))
    updates++
  }
  await new Promise((resolve) => setTimeout(resolve, TICK_MS))
  if (Date.now() >= next) {
    next += SAMPLE_MS
    await sample()
  }
}
await store.flush()
await sample()
await store.close()
rmSync(dir, { recursive: true, force: true })

const steady = samples.filter((s) => s.minute >= WARMUP_MINUTES)
const slope = leastSquaresSlope(steady.map((s) => [s.minute, s.outsideHeapMb]))
const range = (pick: (s: Sample) => number): string => `${Math.min(...steady.map(pick))}–${Math.max(...steady.map(pick))}`
const summary = `after the ${WARMUP_MINUTES}-min warm-up: memory outside the JS heap ${range((s) => s.outsideHeapMb)} MB, slope ${slope.toFixed(2)} MB/min; RSS ${range((s) => s.rssMb)} MB; stored ${range((s) => s.storedMb)} MB`
console.log(summary)
if (warnings.length > 0) console.log(`the store warned ${warnings.length} times, first: ${warnings[0]}`)
if (values.out !== undefined) {
  const lines = [
    '# The relay\'s PGlite store alone: memory under steady writes',
    '',
    `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC · Node ${process.version} · ${roomCount.toLocaleString('en-US')} rooms, ${rate.toLocaleString('en-US')} updates/s of 90–129 random bytes, ${minutes} min, the relay's default write window and compaction thresholds · \`${process.argv.slice(2).join(' ')}\``,
    '',
    `The room store without the relay (bench/relay/storeMemory.ts). Memory outside the JS heap = RSS − V8's heap size: PGlite's WebAssembly memory, Node's own and its buffers. ${summary.charAt(0).toUpperCase()}${summary.slice(1)}.`,
    '',
    '| minute | updates | RSS MB | JS heap MB | outside the JS heap MB | stored MB |',
    '| ---: | ---: | ---: | ---: | ---: | ---: |',
    ...samples.map((s) => `| ${s.minute.toFixed(2)} | ${s.updates.toLocaleString('en-US')} | ${s.rssMb} | ${s.heapTotalMb} | ${s.outsideHeapMb} | ${s.storedMb} |`),
    '',
  ]
  writeFileSync(values.out, lines.join('\n'))
}
