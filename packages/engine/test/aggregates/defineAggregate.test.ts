import { describe, expect, expectTypeOf, it } from 'vitest'
import {
  type AggregateResults,
  compareBytes,
  defineAggregate,
  distinct,
  histogram,
  latest,
  quantiles,
  sameBytes,
} from '@tidemark/engine'
import { eventOf, stateOf } from './aggregateEvents.ts'

const definition = {
  name: 'sumOfSquares',
  init: () => 0,
  add: (sum: number, x: number) => sum + x * x,
  merge: (a: number, b: number) => a + b,
  result: (sum: number) => sum,
  encode: (sum: number) => {
    const bytes = new Uint8Array(8)
    new DataView(bytes.buffer).setFloat64(0, sum, true)
    return bytes
  },
  decode: (bytes: Uint8Array) => {
    if (bytes.length !== 8) throw new RangeError(`expected 8 bytes, got ${bytes.length}`)
    return new DataView(bytes.buffer, bytes.byteOffset).getFloat64(0, true)
  },
}

describe('defineAggregate', () => {
  it('makes a working aggregate with defaults: event.value, finite numbers, a monoid, equal encodings', () => {
    const energy = defineAggregate(definition)
    expect(energy.result(stateOf(energy, [1, 2, 3]))).toBe(14)
    expect(energy.read(eventOf(4))).toBe(4)
    expect(energy.checkInput(Number.NaN)).toBe('expected a finite number, got NaN')
    expect(energy.idempotent).toBe(false)
    expect(energy.configuration).toBe('sumOfSquares')
    expect(energy.equals(3, 3)).toBe(true)
    expect(energy.equals(3, 4)).toBe(false)
  })

  it('keeps what the user gives: of, checkInput, idempotent, configuration, equals', () => {
    const longest = defineAggregate<number, number, string>({
      name: 'longestKey',
      init: () => 0,
      add: (n, key) => Math.max(n, key.length),
      merge: Math.max,
      result: (n) => n,
      encode: (n) => new Uint8Array([n]),
      decode: (bytes) => bytes[0] ?? 0,
      of: (event) => event.key ?? '',
      checkInput: (key) => (key.length > 255 ? 'key longer than 255' : null),
      idempotent: true,
      configuration: 'v1',
      equals: (a, b) => a === b,
    })
    expect(longest.read({ ...eventOf(1), key: 'temp' })).toBe('temp')
    expect(longest.checkInput('x'.repeat(256))).toBe('key longer than 255')
    expect(longest.configuration).toBe('longestKey(v1)')
    expect(longest.idempotent).toBe(true)
  })

  it('takes a name of 100 characters', () => {
    expect(defineAggregate({ ...definition, name: 'x'.repeat(100) }).configuration).toBe('x'.repeat(100))
  })

  it('turns any decode error into a RangeError naming the aggregate', () => {
    const careless = defineAggregate({
      ...definition,
      decode: (bytes) => {
        if (bytes.length !== 8) throw new Error('short')
        return 0
      },
    })
    expect(() => careless.decode(new Uint8Array(3))).toThrow(RangeError)
    expect(() => careless.decode(new Uint8Array(3))).toThrow('sumOfSquares state: short')
    expect(() => careless.decode('abc' as unknown as Uint8Array)).toThrow('sumOfSquares state: expected a Uint8Array, got string')
    expect(() => defineAggregate(definition).decode(new Uint8Array(3))).toThrow('expected 8 bytes, got 3')
  })

  it.each([
    [null, /expected a definition object, got null/],
    [{ ...definition, name: '' }, /name must be a string of 1 to 100 characters, got ""/],
    [{ ...definition, name: 'x'.repeat(101) }, /name must be a string of 1 to 100 characters, got "x{101}"/],
    [{ ...definition, merge: undefined }, /defineAggregate\(sumOfSquares\): merge must be a function, got undefined/],
    [{ ...definition, mergee: () => 0 }, /unknown option 'mergee' \(did you mean 'merge'\?\)/],
    [{ ...definition, of: 'value' }, /of must be a function when given, got string/],
    [{ ...definition, idempotent: 'yes' }, /idempotent must be a boolean/],
    [{ ...definition, configuration: 2 }, /configuration must be a string/],
    [{ ...definition, encode: () => [1, 2] }, /encode must return a Uint8Array, got object for init\(\)/],
  ])('refuses a bad definition (%#)', (bad, message) => {
    expect(() => defineAggregate(bad as never)).toThrow(TypeError)
    expect(() => defineAggregate(bad as never)).toThrow(message)
  })
})

describe('aggregate types', () => {
  it('carry each result type from the options to the results record', () => {
    const aggregates = {
      latency: quantiles({ at: [0.5, 0.95, 0.99], relativeAccuracy: 0.01 }),
      devices: distinct({ of: (event) => event.source }),
      reading: latest(),
      spread: histogram({ bounds: [10, 50, 100] }),
      label: defineAggregate({ ...definition, name: 'label', result: (sum) => `${sum} J` }),
    }
    expectTypeOf<AggregateResults<typeof aggregates>>().toEqualTypeOf<{
      readonly latency: number[]
      readonly devices: number
      readonly reading: number | null
      readonly spread: number[]
      readonly label: string
    }>()
  })
})

describe('byte order', () => {
  it('orders encodings byte by byte, a prefix first', () => {
    expect(compareBytes(new Uint8Array([1, 2]), new Uint8Array([1, 3]))).toBe(-1)
    expect(compareBytes(new Uint8Array([2]), new Uint8Array([1, 9]))).toBe(1)
    expect(compareBytes(new Uint8Array([1]), new Uint8Array([1, 0]))).toBe(-1)
    expect(sameBytes(new Uint8Array([1, 0]), new Uint8Array([1, 0]))).toBe(true)
  })
})
