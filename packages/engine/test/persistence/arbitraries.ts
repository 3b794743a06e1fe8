import fc from 'fast-check'
import { MAX_ABS_TS, type StreamEvent } from '../../src/event.ts'

/** Any UTF-16 code unit, lone surrogates included: ids are arbitrary JS strings. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit))

/** Names drawn from a small pool (so batches repeat them), any code point, or raw code units. */
export const name = fc.oneof(
  fc.constantFrom('d1', 'd2', 'temp', '\uFEFFbom', 'ключ', '温度', '🌊'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }),
  fc.string({ unit: codeUnit, minLength: 1, maxLength: 6 }),
)

export const streamEvent: fc.Arbitrary<StreamEvent> = fc.record(
  {
    id: name,
    source: name,
    seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
    ts: fc.oneof(
      fc.integer({ min: -1e15, max: 1e15 }),
      fc.double({ min: -MAX_ABS_TS, max: MAX_ABS_TS, noNaN: true }),
    ),
    key: fc.oneof(fc.constant(''), name),
    value: fc.double({ noNaN: true, noDefaultInfinity: true }),
  },
  { requiredKeys: ['id', 'source', 'ts', 'value'] },
)

export const batch = fc.array(streamEvent, { maxLength: 40 })

export const lsn = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })
