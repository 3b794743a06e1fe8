/**
 * What writing each frame on its own costs a relay that sends many frames to one socket at once
 * (the changes one read of Redis brings a dashboard's rooms, a backlog after a stall), against
 * the relay's writes gathered per turn (`gatherWrites`): 20 WebSocket clients on 127.0.0.1, the
 * server sends each of them `k` frames of 300 bytes per turn of its event loop, 400 turns, in
 * interleaved rounds; the CPU time of the process (server and clients share it) until every frame
 * arrived. Prints the median per contender and their ratio for each `k`.
 *
 *   pnpm bench:relay:writes [--rounds=5]
 */
import http from 'node:http'
import type net from 'node:net'
import WebSocket, { WebSocketServer } from 'ws'
import { gatherWrites } from '../../packages/relay/src/gate/socketWrites.ts'

const SOCKETS = 20
const TURNS = 400
const FRAME_BYTES = 300
const FRAMES_PER_TURN = [1, 2, 10, 50]
const rounds = Number(process.argv.find((a) => a.startsWith('--rounds='))?.slice('--rounds='.length) ?? 5)
if (!Number.isSafeInteger(rounds) || rounds < 1) throw new Error('--rounds must be a whole number ≥ 1')

/** CPU ms of the process from the first frame sent until the last one arrived. */
async function sendBurst(gather: boolean, perTurn: number): Promise<number> {
  const server = http.createServer()
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false })
  const served: WebSocket[] = []
  server.on('upgrade', (request, socket, head) =>
    wss.handleUpgrade(request, socket, head, (ws) => {
      if (gather) gatherWrites(ws, socket as net.Socket)
      served.push(ws)
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port
  const expected = SOCKETS * perTurn * TURNS
  let received = 0
  let allArrived: () => void = () => undefined
  const arrived = new Promise<void>((resolve) => (allArrived = resolve))
  const clients = await Promise.all(
    Array.from(
      { length: SOCKETS },
      () =>
        new Promise<WebSocket>((resolve, reject) => {
          const client = new WebSocket(`ws://127.0.0.1:${port}`)
          client.on('message', () => {
            if (++received === expected) allArrived()
          })
          client.once('open', () => resolve(client))
          client.once('error', reject)
        }),
    ),
  )
  for (let waited = 0; served.length < SOCKETS; waited++) {
    if (waited > 1000) throw new Error(`${served.length} of ${SOCKETS} sockets served after 5 s`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  const frame = Buffer.alloc(FRAME_BYTES, 7)
  const start = process.cpuUsage()
  for (let turn = 0; turn < TURNS; turn++) {
    for (let i = 0; i < perTurn; i++) for (const ws of served) ws.send(frame)
    await new Promise((resolve) => setImmediate(resolve))
  }
  await arrived
  const used = process.cpuUsage(start)
  for (const client of clients) client.terminate()
  wss.close()
  server.close()
  return (used.user + used.system) / 1000
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[sorted.length >> 1] as number
}

// Warm-up: both paths optimized before anything counts.
await sendBurst(false, 10)
await sendBurst(true, 10)
process.stdout.write(`${SOCKETS} sockets, ${TURNS} turns, ${FRAME_BYTES}-byte frames; CPU ms, median of ${rounds} interleaved rounds\n`)
process.stdout.write('| frames per socket and turn | a write per frame | gathered per turn | gathered / per frame |\n| ---: | ---: | ---: | ---: |\n')
for (const perTurn of FRAMES_PER_TURN) {
  const each: number[] = []
  const gathered: number[] = []
  for (let round = 0; round < rounds; round++) {
    each.push(await sendBurst(false, perTurn))
    gathered.push(await sendBurst(true, perTurn))
  }
  const [a, b] = [median(each), median(gathered)]
  process.stdout.write(`| ${perTurn} | ${a.toFixed(0)} | ${b.toFixed(0)} | ${(b / a).toFixed(2)} |\n`)
}
