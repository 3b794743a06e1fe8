/**
 * What the join-answer tests share: rooms filled with large batches of readings by their devices,
 * and a probe of the socket guard's pacing (`SocketGuard.roomForAnswer`).
 */
import type { HocuspocusProviderWebsocket } from '@hocuspocus/provider'
import { expect, vi } from 'vitest'
import type WebSocket from 'ws'
import { SocketGuard } from '../../src/gate/socketGuard.ts'
import { deviceToken, groupEntry, openRoom, type RoomClient, replicaLog, waitFor } from './roomClients.ts'

/** Waits until every device's writes were acknowledged by the relay (or a device closed), then expects none closed. */
export async function acknowledged(devices: readonly RoomClient[], what: string): Promise<void> {
  await waitFor(() => devices.every((device) => !device.provider.hasUnsyncedChanges || device.closed.length > 0), `${what} acknowledged`, 60_000)
  for (const device of devices) expect(device.closed).toEqual([])
}

/**
 * Opens `fleet`'s rooms `names` over `socket`, one device each (added to `opened` at once, for the
 * test's cleanup), and has every device write `batches` batches of `perBatch` readings, each
 * batch acknowledged by all before the next; returns the devices.
 */
export async function fillRooms(socket: HocuspocusProviderWebsocket, opened: RoomClient[], fleet: string, names: readonly string[], batches: number, perBatch = 4_000): Promise<RoomClient[]> {
  const devices = await Promise.all(names.map(async (name) => openRoom(socket, `${fleet}/${name}`, await deviceToken(fleet, name))))
  opened.push(...devices)
  await waitFor(() => devices.every((device) => device.synced()), 'the devices synced')
  for (let batch = 0; batch < batches; batch++) {
    for (const [i, device] of devices.entries()) {
      const name = names[i] as string
      device.doc.transact(() => {
        const log = replicaLog(device.doc, name)
        for (let j = 0; j < perBatch; j++) log.push([groupEntry(`${name}-temp`, (batch * perBatch + j) * 60_000, j % 256)])
      })
    }
    await acknowledged(devices, `batch ${batch}`)
  }
  return devices
}

/**
 * Spies on the socket guard: the weight of each answer (to a join, or a catch-up on what the other
 * relays sent: `catchUp.ts`) when it was asked for, and how many of those answers it did not admit
 * at once (they waited for the socket's queue to drain).
 */
export function answerWaits(): { weights: number[]; waited: number } {
  const seen = { weights: [] as number[], waited: 0 }
  const roomForAnswer = SocketGuard.prototype.roomForAnswer
  vi.spyOn(SocketGuard.prototype, 'roomForAnswer').mockImplementation(function (this: SocketGuard, weigh: () => number) {
    seen.weights.push(weigh())
    let admitted = false
    const answer = roomForAnswer.call(this, weigh).then(() => {
      admitted = true
    })
    // Queued after `admitted` is set when the guard admitted the answer at once, before otherwise.
    queueMicrotask(() => {
      if (!admitted) seen.waited++
    })
    return answer
  })
  return seen
}

/** The most the relay had queued on its side of a socket after any of its sends, read as it goes. */
export function queuedPeak(serverSide: WebSocket): () => number {
  let peak = 0
  const send = serverSide.send.bind(serverSide)
  serverSide.send = ((...args: Parameters<WebSocket['send']>) => {
    send(...args)
    peak = Math.max(peak, serverSide.bufferedAmount)
  }) as WebSocket['send']
  return () => peak
}
