/**
 * The relay benchmark's device simulator (a child process of relayBench.ts, driven over IPC):
 * every device is what a Tidemark device runs, a real engine bound to its own `Y.Doc` with
 * `bindDoc`, joined to its own room `<fleet>/<device>` over its own socket with `connectRelay`.
 * Each update is one engine batch of readings (temp, humidity, battery) taken at `Date.now()`,
 * so the reading's `ts` is the send time the dashboards measure latency from.
 *
 * Devices send on a fixed schedule, spread evenly over each second; how late the simulator ran
 * against that schedule is reported as its send lag, to show it is not the bottleneck.
 */
import { createEngine, type Engine } from '@tidemark/engine'
import { bindDoc, connectRelay, type Relay } from '@tidemark/yjs'
import WebSocket from 'ws'
import * as Y from 'yjs'
import type { ChildConfig, DeviceCounters, FromDevices, ToDevices } from './benchMessages.ts'
import { deviceToken, secretBytes } from './benchTokens.ts'
import { allDevices, BENCH_ENGINE_OPTIONS, type DeviceIdentity, deviceUpdate, sendOffsetMs } from './fleetLayout.ts'
import { LatencyHistogram } from './latencyHistogram.ts'

/** How often sync states are polled while waiting for devices to connect or come back. */
const POLL_MS = 25

interface SimulatedDevice {
  readonly identity: DeviceIdentity
  readonly engine: Engine
  readonly doc: Y.Doc
  readonly relay: Relay
  rawBytes: number
  updates: number
  timer: ReturnType<typeof setTimeout> | undefined
  reconnect: ReturnType<typeof setTimeout> | undefined
}

const sendLag = new LatencyHistogram()
let devices: SimulatedDevice[] = []
let anomalies = 0
let errors = 0
let stopped = false

function send(message: FromDevices): void {
  process.send?.(message)
}

function reportError(error: Error): void {
  errors++
  if (errors <= 5) process.stderr.write(`device simulator: ${error.message}\n`)
}

function counters(): DeviceCounters {
  let sent = 0
  let bytes = 0
  let connected = 0
  let refusals = 0
  for (const device of devices) {
    sent += device.updates
    bytes += device.rawBytes
    const status = device.engine.syncStatus()
    if (status.state === 'connected') connected++
    if (status.refusal !== null) refusals++
  }
  return { sent, bytes, connected, sendLag: sendLag.summary(), anomalies, refusals, errors }
}

async function start(config: ChildConfig): Promise<void> {
  const secret = secretBytes(config.secret)
  const { layout } = config
  const periodMs = 1000 / layout.updatesPerSecond
  const identities = allDevices(layout)
  const tokens = await Promise.all(identities.map((identity) => deviceToken(identity, secret)))
  const startedAt = Date.now()
  devices = identities.map((identity, i) => {
    const engine = createEngine({ ...BENCH_ENGINE_OPTIONS, replicaId: identity.replica })
    const doc = new Y.Doc()
    const origin = { device: identity.source }
    // A real device measures its doc every 5 s for its sync status; the simulator skips that cost.
    bindDoc(engine, doc, { origin, measureEvery: Number.POSITIVE_INFINITY, onError: reportError })
    const relay = connectRelay({
      url: config.relayUrl,
      token: tokens[i] as string,
      WebSocket,
      jitter: { initialMs: config.reconnectSpreadMs, baseMs: 500, capMs: config.reconnectSpreadMs },
      onError: reportError,
    })
    const device: SimulatedDevice = { identity, engine, doc, relay, rawBytes: 0, updates: 0, timer: undefined, reconnect: undefined }
    doc.on('update', (update: Uint8Array, updateOrigin: unknown) => {
      if (updateOrigin !== origin) return
      device.rawBytes += update.byteLength
      device.updates++
    })
    relay.join(doc, identity.room)
    return device
  })
  // Send phases spread evenly over the period: 1000 devices at 1/s is one update per millisecond.
  const firstAt = startedAt + 1000
  for (const device of devices) schedule(device, firstAt + sendOffsetMs(device.identity, devices.length, periodMs), periodMs)
  if (!(await until(() => devices.every((device) => device.engine.syncStatus().state === 'connected'), 600_000))) {
    throw new Error(`${devices.filter((device) => device.engine.syncStatus().state !== 'connected').length} devices not in sync 600 s after connecting`)
  }
  send({ type: 'ready', connectMs: Date.now() - startedAt })
}

function schedule(device: SimulatedDevice, dueAt: number, periodMs: number): void {
  device.timer = setTimeout(
    () => {
      if (stopped) return
      sendLag.add(Date.now() - dueAt)
      record(device)
      schedule(device, dueAt + periodMs, periodMs)
    },
    Math.max(0, dueAt - Date.now()),
  )
}

/** One update: a batch of one reading per series, through the engine into the device's doc. */
function record(device: SimulatedDevice): void {
  const { engine, identity } = device
  const receipt = engine.ingest(deviceUpdate(identity, engine.nextSeq(identity.source), Date.now()))
  anomalies += receipt.anomalies.length
}

function until(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs
  return new Promise((resolve) => {
    const poll = (): void => {
      if (condition()) resolve(true)
      else if (Date.now() > end) resolve(false)
      else setTimeout(poll, POLL_MS)
    }
    poll()
  })
}

/** Drops every device socket at once; each reconnects at a uniform random time within `spreadMs`. */
function drop(spreadMs: number): void {
  const at = Date.now()
  for (const device of devices) {
    device.relay.disconnect()
    device.reconnect = setTimeout(() => device.relay.connect(), Math.floor(Math.random() * spreadMs))
  }
  send({ type: 'dropped', at })
  watchResync(at, 60_000, true)
}

/**
 * Reports when every device is back in sync after a disruption at `at`, with the last seq each
 * had recorded by then: what every dashboard must show to have converged.
 */
function watchResync(at: number, timeoutMs: number, alreadyDown: boolean): void {
  const down = new Set<SimulatedDevice>(alreadyDown ? devices : [])
  const targets: Record<string, number> = {}
  let last = at
  const poll = (): void => {
    for (const device of devices) {
      const source = device.identity.source
      if (source in targets) continue
      const state = device.engine.syncStatus().state
      if (state !== 'connected') down.add(device)
      else if (down.has(device)) {
        targets[source] = device.engine.nextSeq(source) - 1
        last = Date.now()
      }
    }
    const done = Object.keys(targets).length === devices.length
    if (done || Date.now() - at > timeoutMs) {
      const missing = devices.map((device) => device.identity.source).filter((source) => !(source in targets))
      send({ type: 'resynced', resync: { disruptedAt: at, targets, lastResyncMs: last - at, missing } })
      return
    }
    setTimeout(poll, POLL_MS)
  }
  poll()
}

function stop(): void {
  stopped = true
  const rawBytes: Record<string, number> = {}
  const updates: Record<string, number> = {}
  for (const device of devices) {
    clearTimeout(device.timer)
    clearTimeout(device.reconnect)
    rawBytes[device.identity.room] = device.rawBytes
    updates[device.identity.room] = device.updates
  }
  const final = counters()
  for (const device of devices) device.relay.destroy()
  process.send?.({ type: 'final', rawBytes, updates, counters: final } satisfies FromDevices, () => process.exit(0))
}

process.on('message', (message: ToDevices) => {
  switch (message.type) {
    case 'start':
      start(message.config).catch((error: unknown) => send({ type: 'error', message: String(error) }))
      break
    case 'drop':
      drop(message.spreadMs)
      break
    case 'watch-resync':
      watchResync(message.at, message.timeoutMs, false)
      break
    case 'counters':
      send({ type: 'counters', counters: counters() })
      break
    case 'stop':
      stop()
      break
  }
})
// The orchestrator gone (crashed, interrupted): nothing left to simulate for.
process.on('disconnect', () => process.exit(0))
