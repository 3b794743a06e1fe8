/**
 * replication: what replicating lattice state through Yjs costs, measured through the real
 * binding (bindDoc) and engines.
 *
 *  (merging 8 replicas x 10k cells and bytes per cell are the merge-8-replicas profile);
 *  - reconnect burst: a device offline for 10 minutes ingests 20 readings a second; the sync
 *    step 2 it sends on reconnect, against the raw events (JSON) it summarizes;
 *  - steady run: 3 replicas, 20 keys each, one batch a second for an hour with 1-minute
 *    windows and 2-minute retention; encoded doc size every 10 minutes.
 *
 *   node --import tsx --conditions=@tidemark/source bench/replication.ts [--no-write]
 *
 * Writes bench/results/replication-latest.json (with the time and revision measured).
 */
import { boundedOutOfOrderness, createEngine, type Engine, type StreamEvent, tumbling } from '@tidemark/engine'
import * as Y from 'yjs'
import { bindDoc } from '@tidemark/yjs'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_DIR } from './harness/child.ts'
import { measuredRevision } from './harness/revision.ts'
import { isMain } from './measure.ts'

const MINUTE = 60_000
const T0 = 1_700_000_000_000 - (1_700_000_000_000 % MINUTE)

function bound(options: Parameters<typeof createEngine>[0]): { engine: Engine; doc: Y.Doc } {
  const engine = createEngine(options)
  const doc = new Y.Doc()
  bindDoc(engine, doc, { onError: (e) => console.error(e) })
  return { engine, doc }
}

export function reconnectBurst(): Record<string, number> {
  const options = { windows: tumbling(MINUTE), watermark: boundedOutOfOrderness(5_000), retention: 10 * MINUTE }
  const device = bound({ ...options, replicaId: 'device' })
  const server = new Y.Doc()
  Y.applyUpdate(server, Y.encodeStateAsUpdate(device.doc))
  let seq = 0
  let raw = 0
  for (let second = 0; second < 600; second++) {
    const batch: StreamEvent[] = []
    for (let k = 0; k < 20; k++) {
      seq++
      batch.push({ id: `dev-${seq}`, source: 'dev', seq, ts: T0 + second * 1000 + k, key: `sensor-${k}`, value: 20 + (seq % 50) / 10 })
    }
    raw += JSON.stringify(batch).length
    device.engine.ingest(batch)
  }
  const step2 = Y.encodeStateAsUpdate(device.doc, Y.encodeStateVector(server)).byteLength
  return { events: seq, rawEventBytes: raw, syncBytes: step2, ratio: Math.round((raw / step2) * 10) / 10 }
}

export function steady(seconds = 3600, sampleEvery = 600): { second: number; docBytes: number; liveCells: number }[] {
  let now = 0
  const options = {
    windows: tumbling(MINUTE),
    watermark: boundedOutOfOrderness(5_000),
    retention: 2 * MINUTE,
    now: () => now,
  }
  const replicas = Array.from({ length: 3 }, (_, i) => bound({ ...options, replicaId: `r${i}` }))
  // What each wrote on bind, before the link below existed (a provider's first sync does this).
  for (const a of replicas) for (const b of replicas) if (a !== b) Y.applyUpdate(b.doc, Y.encodeStateAsUpdate(a.doc), 'peer')
  replicas.forEach((from, f) => {
    from.doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin === 'peer') return
      replicas.forEach((to, t) => {
        if (t !== f) Y.applyUpdate(to.doc, update, 'peer')
      })
    })
  })
  const samples: { second: number; docBytes: number; liveCells: number }[] = []
  for (let second = 1; second <= seconds; second++) {
    now = T0 + second * 1000
    replicas.forEach((r, i) => {
      const batch = Array.from({ length: 20 }, (_, k) => ({
        id: `d${i}-${second}-${k}`,
        source: `d${i}`,
        seq: (second - 1) * 20 + k + 1,
        ts: T0 + second * 1000 + k,
        key: `sensor-${k}`,
        value: 20 + ((second + k) % 30) / 10,
      }))
      r.engine.ingest(batch)
    })
    if (second % sampleEvery === 0) {
      const first = replicas[0] as { engine: Engine; doc: Y.Doc }
      samples.push({ second, docBytes: Y.encodeStateAsUpdate(first.doc).byteLength, liveCells: first.engine.stats().cells })
    }
  }
  return samples
}

/**
 * Sparse writes: one device with 100 keys per window, each batch one reading of one key (keys
 * in turn), 10 batches a second for 10 minutes. What one batch costs on the wire (the Yjs
 * update of its transaction, v1) when a window already holds up to 100 keys of that source.
 */
export function sparseWrites(): Record<string, number> {
  const device = bound({ windows: tumbling(MINUTE), watermark: boundedOutOfOrderness(5_000), retention: 2 * MINUTE, replicaId: 'device' })
  let bytes = 0
  let updates = 0
  device.doc.on('update', (update: Uint8Array) => {
    bytes += update.byteLength
    updates++
  })
  const batches = 6_000
  for (let b = 1; b <= batches; b++) {
    device.engine.ingest([{ id: `s-${b}`, source: 'dev', seq: b, ts: T0 + b * 100, key: `sensor-${b % 100}`, value: 20 + (b % 50) / 10 }])
  }
  return { batches, updates, bytesPerBatch: Math.round(bytes / updates), docBytes: Y.encodeStateAsUpdate(device.doc).byteLength }
}

export function run(): Record<string, unknown> {
  return { reconnectBurst: reconnectBurst(), steady: steady(), sparseWrites: sparseWrites() }
}

if (isMain(import.meta.url)) {
  const figures = run()
  const record = { measuredAt: new Date().toISOString(), revision: measuredRevision(['packages/engine', 'packages/yjs', 'bench/replication.ts']), ...figures }
  // The record the yjs README quotes; `--no-write` only prints.
  if (!process.argv.includes('--no-write')) writeFileSync(join(REPO_DIR, 'bench/results/replication-latest.json'), `${JSON.stringify(record, null, 1)}\n`)
  process.stdout.write(`${JSON.stringify(record, null, 1)}\n`)
}
