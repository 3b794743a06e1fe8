/**
 * Hostile inputs for the anomaly-heavy scenarios: every shape an `ingest` caller can pass
 * by mistake or malice, each with zero, one or several faults. Zero-fault shapes (extra
 * fields, null prototypes, own `__proto__` keys, 1024-character names, MAX_SAFE_INTEGER
 * seqs, the largest accepted timestamps) are valid and must be placed like any event.
 * Everything here survives the case-file encoding (no functions, symbols or proxies).
 */
import { invalidInput } from '../model/streamPlan.ts'
import { MAX_ABS_TS, MAX_NAME_LENGTH } from '@tidemark/engine'

type Random = () => number

const LONG = 'x'.repeat(MAX_NAME_LENGTH + 1)
const LONGEST = 'y'.repeat(MAX_NAME_LENGTH)

/** Field values that fail validation, by field. */
const BAD_FIELD: Readonly<Record<'id' | 'source' | 'ts' | 'value' | 'seq' | 'key', readonly unknown[]>> = {
  id: [undefined, '', 7, null, { id: 'x' }, ['a'], LONG, true],
  source: [undefined, '', 3, null, LONG, false, 1n],
  ts: [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, '5', null, undefined, MAX_ABS_TS + 1, -MAX_ABS_TS - 1, 1e300, 2n],
  value: [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, '3', null, undefined, 4n, {}],
  seq: [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, 2 ** 53 + 2, 1e300, '2', null],
  key: [7, null, {}, LONG, ['k'], false],
}

/** One hostile input; `n` keeps ids unique, `sources` are names in use (so valid shapes can collide with real seqs). */
export function malformedInput(random: Random, n: number, sources: readonly string[]): unknown {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T
  const source = sources.length > 0 ? pick(sources) : 'd0'
  const base: Record<string, unknown> = { id: `bad#${n}`, source, ts: Math.floor(random() * 200), value: Math.floor(random() * 21) - 10 }
  switch (Math.floor(random() * 12)) {
    case 0:
      return pick([null, undefined, 0, 42, 'event', '', true, 7n, [], [base], { length: 3 }])
    case 1:
      // The property-test inputs: one fault each.
      return invalidInput(Math.floor(random() * 100), n)
    case 2:
    case 3: {
      // One or several faulty fields.
      const faults = 1 + Math.floor(random() * 3)
      const out = { ...base }
      for (let k = 0; k < faults; k++) {
        const field = pick(Object.keys(BAD_FIELD) as (keyof typeof BAD_FIELD)[])
        const value = pick(BAD_FIELD[field])
        if (value === undefined) delete out[field]
        else out[field] = value
      }
      return out
    }
    case 4:
      // Valid with extra fields, including keys that are dangerous on plain objects.
      return withOwn({ ...base, extra: 'x', nested: { deep: [1, 2] }, seqNo: 3 }, pick(['__proto__', 'constructor', 'prototype']), { ts: 'poison' })
    case 5: {
      // Valid, null prototype.
      const bare = Object.create(null) as Record<string, unknown>
      Object.assign(bare, base)
      return bare
    }
    case 6:
      // Valid at the edges: longest names, largest safe seq (a gap), hostile key names.
      return { ...base, id: `${LONGEST.slice(0, MAX_NAME_LENGTH - String(n).length - 1)}#${n}`, key: pick([LONGEST, '__proto__', 'toString', '']), seq: pick([undefined, Number.MAX_SAFE_INTEGER, 2 ** 31]) }
    case 7:
      // A seq already used by the source, with other content: a duplicate, counted once (also a conflicting_duplicate when its ts provably differs).
      return { ...base, seq: 1 + Math.floor(random() * 6), value: 999 }
    case 8:
      // An id reused without seq, other content (a conflicting_duplicate when its ts differs).
      return { id: `${source}#${1 + Math.floor(random() * 6)}`, source, ts: base.ts, value: -999 }
    case 9:
      // Lone surrogates and odd code points in names (valid).
      return { ...base, id: `\ud800bad#${n}`, key: pick(['\udfff', '\u0000', '\ufeffk', 'é']) }
    case 10:
      // Far in the past (valid): a clock going far back.
      return { ...base, ts: pick([-1e9, -MAX_ABS_TS, 0]) }
    default:
      // Fractional times are valid (-0 is left to the catalogue: the model keeps its sign, the engine need not).
      return { ...base, ts: pick([0.5, 1e-9, 7.25]) }
  }
}

function withOwn(target: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  return target
}
