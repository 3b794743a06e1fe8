/** What the relay's log lines say about an error: never nothing. */
import { expect, it } from 'vitest'
import { OpenRefused, Refusal } from '../src/protocol/refusal.ts'
import { describeError } from '../src/relayLog.ts'

it('a room refused to open reads as its refusal, not as the empty message Hocuspocus needs', () => {
  const refused = new OpenRefused(new Refusal('store-unavailable', 'the room could not be loaded'))
  expect(refused.message).toBe('')
  expect(describeError(refused)).toBe('refused: store-unavailable the room could not be loaded')
})

it('an error without a message reads as its name and its cause', () => {
  expect(describeError(new Error('', { cause: 'Could not acquire lock' }))).toBe('Error: Could not acquire lock')
  expect(describeError(new TypeError(''))).toBe('TypeError')
  expect(describeError(new Error('', { cause: new RangeError('too far') }))).toBe('Error: too far')
  expect(describeError(new Error('store full'))).toBe('store full')
  expect(describeError('plain text')).toBe('plain text')
  const own = new Error('')
  ;(own as { cause?: unknown }).cause = own
  expect(describeError(own)).toBe('Error: Error: Error: Error')
  expect(describeError(new AggregateError([new Error('connect ECONNREFUSED 127.0.0.1:6379')], ''))).toBe('AggregateError: connect ECONNREFUSED 127.0.0.1:6379')
  expect(describeError(new Error('', { cause: { code: 'EPIPE' } }))).toBe('Error: {"code":"EPIPE"}')
})
