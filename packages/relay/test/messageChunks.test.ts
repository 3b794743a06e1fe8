/** Messages larger than a chunk cross Redis in chunks: put back together, or dropped when one is lost. */
import { expect, it } from 'vitest'
import { ChunkAssembler, chunksOf } from '../src/scaleout/messageChunks.ts'

const channel = Buffer.from('tidemark:fleet/d1')

function framed(identifier: string, body: Buffer): Buffer {
  const id = Buffer.from(identifier)
  return Buffer.concat([Buffer.from([id.byteLength]), id, body])
}

it('a message of several chunks is put back together; one whose chunk was lost is dropped, and the next one crosses', () => {
  const message = framed('relay-a', Buffer.from(Array.from({ length: 10 }, (_, i) => i)))
  const small = framed('relay-a', Buffer.from([1, 2]))
  expect(chunksOf(small, 16)).toEqual([small])
  const chunks = chunksOf(message, 4)
  expect(chunks).toHaveLength(5)
  const assembler = new ChunkAssembler('relay-b')
  expect(assembler.take(channel, small)).toBe(small)
  expect(chunks.slice(0, -1).map((chunk) => assembler.take(channel, chunk))).toEqual([null, null, null, null])
  expect(assembler.take(channel, chunks.at(-1) as Buffer)).toEqual(message)

  // The third chunk lost (the subscriber reconnected): the rest is dropped, not put together wrong.
  const lost = [...chunks.slice(0, 2), ...chunks.slice(3)].map((chunk) => assembler.take(channel, chunk))
  expect(lost).toEqual([null, null, null, null])
  expect(assembler.bytes).toBe(0)
  expect(chunks.map((chunk) => assembler.take(channel, chunk)).at(-1)).toEqual(message)

  // A relay's own chunks are not put together; a room's unload forgets what was under way.
  expect(new ChunkAssembler('relay-a').take(channel, chunks[0] as Buffer)).toBeNull()
  assembler.take(channel, chunks[0] as Buffer)
  expect(assembler.bytes).toBeGreaterThan(0)
  assembler.forget(channel.toString())
  expect(assembler.bytes).toBe(0)
})
