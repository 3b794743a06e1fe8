/** A relay's publishes to Redis go out in batches: at the end of a turn after a quiet spell, then at least the spacing apart. */
import { ManualTimers } from '@tidemark/engine/testing'
import { expect, it } from 'vitest'
import { PublishQueue, type QueuedPublish } from '../src/scaleout/publishQueue.ts'

/** One turn of the event loop: the queue's end-of-turn write (an earlier immediate) runs first. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

function recorded(spacingMs = 5): { readonly queue: PublishQueue; readonly timers: ManualTimers; readonly batches: string[][] } {
  const timers = new ManualTimers(0)
  const batches: string[][] = []
  const queue = new PublishQueue((batch: readonly QueuedPublish[]) => batches.push(batch.map(([channel, message]) => `${channel}:${message.toString()}`)), { timers, now: timers.read, spacingMs })
  return { queue, timers, batches }
}

it('the first publish after a quiet spell goes at the end of its turn, with every publish of that turn, in order', async () => {
  const { queue, batches } = recorded()
  queue.push('a', Buffer.from('1'))
  queue.push('b', Buffer.from('2'))
  queue.push('a', Buffer.from('3'))
  expect(batches).toEqual([])
  expect(queue.size).toBe(3)
  await turn()
  expect(batches).toEqual([['a:1', 'b:2', 'a:3']])
  expect(queue.size).toBe(0)
})

it('while publishes keep coming, each write follows the last one by the spacing and carries everything queued meanwhile', async () => {
  const { queue, timers, batches } = recorded(5)
  queue.push('a', Buffer.from('1'))
  await turn()
  expect(batches).toEqual([['a:1']])

  // Queued within the spacing: not at the end of its turn, but when the spacing ends.
  queue.push('a', Buffer.from('2'))
  await turn()
  queue.push('b', Buffer.from('3'))
  await turn()
  expect(batches).toHaveLength(1)
  timers.advance(4)
  expect(batches).toHaveLength(1)
  timers.advance(1)
  expect(batches).toEqual([['a:1'], ['a:2', 'b:3']])

  // That write armed the spacing again.
  queue.push('a', Buffer.from('4'))
  await turn()
  expect(batches).toHaveLength(2)
  timers.advance(5)
  expect(batches.at(-1)).toEqual(['a:4'])

  // Nothing waits: no timer. Once the spacing has passed, the next publish goes at the end of its turn.
  expect(timers.pending).toEqual([])
  timers.advance(5)
  queue.push('c', Buffer.from('5'))
  await turn()
  expect(batches.at(-1)).toEqual(['c:5'])
  expect(batches.flat()).toEqual(['a:1', 'a:2', 'b:3', 'a:4', 'c:5'])
})

it('stop writes what is queued at once and arms nothing after; a later publish goes at the end of its turn', async () => {
  const { queue, timers, batches } = recorded(5)
  queue.push('a', Buffer.from('1'))
  await turn()
  queue.push('a', Buffer.from('2'))
  await turn()
  expect(timers.pending).toEqual([5])
  queue.stop()
  expect(batches).toEqual([['a:1'], ['a:2']])
  expect(timers.pending).toEqual([])

  queue.push('a', Buffer.from('3'))
  queue.push('a', Buffer.from('4'))
  await turn()
  expect(batches.at(-1)).toEqual(['a:3', 'a:4'])
  expect(timers.pending).toEqual([])
  // Nothing queued: stopping again writes nothing.
  queue.stop()
  expect(batches).toHaveLength(3)
})
