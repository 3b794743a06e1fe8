/**
 * What the relay weighs its answer to a join at (`joinAnswerBytes`) for a client that lacks some
 * of the room: never below the two messages Hocuspocus sends (the step 2, the update
 * `Y.encodeStateAsUpdate(document, held)`, and the room's step 1), the update measured to the
 * byte. Rooms of every content kind Yjs writes, written by several clients (seeded); clients
 * holding any state, a clock inside a struct included. And what the measure costs: what the
 * client lacks, not the room.
 */
import fc from 'fast-check'
import * as encoding from 'lib0/encoding'
import { afterAll, describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { assertSeeded } from '@tidemark/seeded-random/property'
import { answerUpdateBytes, joinAnswerBytes } from '../src/gate/joinAnswer.ts'
import { answerBytes as answerBytesIn, countStructReads, settingsRoom } from './support/answerMeasures.ts'

const FILE = 'packages/relay/test/lackedAnswerBytes.test.ts'
const ROOM = 'fleet-a/d07'

/** The bytes Hocuspocus sends a client of `held` (encoded) in this file's room for its step 1. */
const answerBytes = (document: Y.Doc, held: Uint8Array): number => answerBytesIn(document, held, ROOM)

/** Text of characters 1 to 4 UTF-8 bytes long, and halves of a surrogate pair alone. */
const text = fc.string({ unit: fc.constantFrom('a', 'é', '€', '中', '😀', '𐍈', '\ud83d', '\ude00'), minLength: 1, maxLength: 12 })

/** Any value lib0's `writeAny` writes, at any depth: integers of every width, floats, bigints, strings, bytes. */
const { value: anyValue } = fc.letrec<{ leaf: unknown; value: unknown }>((tie) => ({
  leaf: fc.oneof(
    fc.integer(),
    fc.integer({ min: -(2 ** 31) - 5, max: 2 ** 31 + 5 }),
    fc.double(),
    fc.float(),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
    fc.string({ unit: 'binary', maxLength: 8 }),
    text,
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.uint8Array({ maxLength: 300 }),
  ),
  value: fc.oneof({ depthSize: 'small' }, tie('leaf'), fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(text, tie('value'), { maxKeys: 4 })),
}))

/** A value a Y.Array or Y.Map takes as an entry of its own: a ContentAny, or bytes (a ContentBinary). */
const entry = fc.oneof(
  fc.integer(),
  fc.double(),
  text,
  fc.boolean(),
  fc.constant(null),
  fc.uint8Array({ maxLength: 200 }),
  fc.array(anyValue, { maxLength: 4 }),
  // Yjs takes a plain object only (one whose constructor is Object) as an entry.
  fc.dictionary(text, anyValue, { maxKeys: 4, noNullPrototype: true }),
)

/** One writer's change to the room's shared types. */
type Change =
  | { readonly op: 'type'; readonly at: number; readonly text: string; readonly bold: boolean }
  | { readonly op: 'erase' | 'format'; readonly at: number; readonly count: number }
  | { readonly op: 'embed'; readonly at: number; readonly embed: unknown }
  | { readonly op: 'insert'; readonly at: number; readonly values: unknown[] }
  | { readonly op: 'drop'; readonly at: number; readonly count: number }
  | { readonly op: 'nest'; readonly at: number; readonly values: unknown[] }
  | { readonly op: 'push nested'; readonly values: unknown[] }
  | { readonly op: 'set'; readonly key: string; readonly value: unknown; readonly as: 'value' | 'text' | 'map' | 'subdoc' }
  | { readonly op: 'unset'; readonly key: string }
  | { readonly op: 'set inside'; readonly key: string; readonly value: unknown }
  | { readonly op: 'xml'; readonly at: number; readonly name: string }
  | { readonly op: 'legacy json'; readonly values: unknown[] }

const key = fc.constantFrom('mode', 'rate', 'é-label', '😀', 'k4')
const change: fc.Arbitrary<Change> = fc.oneof(
  fc.record({ op: fc.constant('type' as const), at: fc.nat(), text, bold: fc.boolean() }),
  fc.record({ op: fc.constantFrom('erase' as const, 'format' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 20 }) }),
  fc.record({ op: fc.constant('embed' as const), at: fc.nat(), embed: fc.dictionary(text, fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 2 }) }),
  fc.record({ op: fc.constant('insert' as const), at: fc.nat(), values: fc.array(entry, { minLength: 1, maxLength: 8 }) }),
  fc.record({ op: fc.constant('drop' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 10 }) }),
  fc.record({ op: fc.constant('nest' as const), at: fc.nat(), values: fc.array(entry, { maxLength: 4 }) }),
  fc.record({ op: fc.constant('push nested' as const), values: fc.array(entry, { minLength: 1, maxLength: 4 }) }),
  fc.record({ op: fc.constant('set' as const), key, value: entry, as: fc.constantFrom('value' as const, 'text' as const, 'map' as const, 'subdoc' as const) }),
  fc.record({ op: fc.constant('unset' as const), key }),
  // An entry of a setting's map, which other writers may have written before (overwritten, it
  // stays deleted in the map until the setting is overwritten and its children collected).
  fc.record({ op: fc.constant('set inside' as const), key: fc.constantFrom('value', 'unit'), value: entry }),
  fc.record({ op: fc.constant('xml' as const), at: fc.nat(), name: fc.constantFrom('p', 'é-block', 'li') }),
  fc.record({ op: fc.constant('legacy json' as const), values: fc.array(fc.oneof(fc.integer(), text, fc.constant(null), fc.dictionary(text, fc.integer(), { maxKeys: 2 })), { minLength: 1, maxLength: 4 }) }),
)

/** A change by writer `writer`, made after it synced from the room (or concurrently, on what it held). */
const step = fc.record({ writer: fc.nat({ max: 3 }), synced: fc.boolean(), change })

/**
 * A V1 update of one item of JSON content (Yjs' old format for array entries, which it still
 * reads and writes), by `client` from `clock`, in the root array `legacy`.
 */
function legacyJsonUpdate(client: number, clock: number, values: readonly unknown[]): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, 1)
  encoding.writeVarUint(encoder, 1)
  encoding.writeVarUint(encoder, client)
  encoding.writeVarUint(encoder, clock)
  // ContentJSON (2), no origin: its parent is a root type, named.
  encoding.writeUint8(encoder, 2)
  encoding.writeVarUint(encoder, 1)
  encoding.writeVarString(encoder, 'legacy')
  encoding.writeVarUint(encoder, values.length)
  for (const value of values) encoding.writeVarString(encoder, JSON.stringify(value))
  // No deletions.
  encoding.writeVarUint(encoder, 0)
  return encoding.toUint8Array(encoder)
}

/** The client of the updates of JSON content: no writer's (a client applying an update of its own ID changes its ID). */
const LEGACY_CLIENT = 2 ** 32 + 5

/** Applies `change` to `doc`, written as its client (an update of JSON content is the room's, in `written`). */
function make(doc: Y.Doc, change: Change): void {
  const notes = doc.getText('notes')
  const log = doc.getArray<unknown>('log')
  const settings = doc.getMap<unknown>('settings')
  switch (change.op) {
    case 'type':
      notes.insert(change.at % (notes.length + 1), change.text, change.bold ? { bold: true } : {})
      return
    case 'erase':
    case 'format': {
      if (notes.length === 0) return
      const at = change.at % notes.length
      const count = Math.min(change.count, notes.length - at)
      if (change.op === 'erase') notes.delete(at, count)
      else notes.format(at, count, { italic: change.count % 2 === 0 ? true : null })
      return
    }
    case 'embed':
      notes.insertEmbed(change.at % (notes.length + 1), change.embed as object)
      return
    case 'insert':
      log.insert(change.at % (log.length + 1), change.values)
      return
    case 'drop': {
      if (log.length === 0) return
      const at = change.at % log.length
      log.delete(at, Math.min(change.count, log.length - at))
      return
    }
    case 'nest': {
      const nested = new Y.Array<unknown>()
      nested.push(change.values)
      log.insert(change.at % (log.length + 1), [nested])
      return
    }
    case 'push nested': {
      const nested = log.toArray().find((item): item is Y.Array<unknown> => item instanceof Y.Array)
      nested?.push(change.values)
      return
    }
    case 'set':
      if (change.as === 'value') settings.set(change.key, change.value)
      else if (change.as === 'text') settings.set(change.key, new Y.Text(`${change.key}: ${typeof change.value === 'string' ? change.value : 'on'}`))
      else if (change.as === 'map') {
        const map = new Y.Map<unknown>()
        map.set('value', change.value)
        settings.set(change.key, map)
      } else settings.set(change.key, new Y.Doc({ guid: `sub-${change.key}`, meta: { value: change.value } }))
      return
    case 'unset':
      settings.delete(change.key)
      return
    case 'set inside': {
      const map = [...settings.values()].find((value): value is Y.Map<unknown> => value instanceof Y.Map)
      map?.set(change.key, change.value)
      return
    }
    case 'xml': {
      const xml = doc.getXmlFragment('xml')
      const element = new Y.XmlElement(change.name)
      element.setAttribute('class', change.name)
      element.insert(0, [new Y.XmlText(change.name)])
      // Yjs' types leave hooks out of a fragment's children; it takes them.
      const hook = new Y.XmlHook(`hook-${change.name}`) as unknown as Y.XmlElement
      xml.insert(change.at % (xml.length + 1), [element, hook])
      return
    }
    case 'legacy json':
      return
  }
}

/**
 * The room's document, written by `writers` (their client IDs) through `steps`, each change synced
 * into it as it is made; `afterEach` looks at it after each.
 */
function written(writerIds: readonly number[], steps: readonly { writer: number; synced: boolean; change: Change }[], gc: boolean, afterEach?: (document: Y.Doc) => void): Y.Doc {
  const document = new Y.Doc({ gc })
  const writers = writerIds.map((id) => {
    const doc = new Y.Doc({ gc })
    doc.clientID = id
    return doc
  })
  for (const { writer, synced, change } of steps) {
    const doc = writers[writer % writers.length] as Y.Doc
    if (change.op === 'legacy json') {
      // Written by an old client straight into the room; the writers get it as they sync.
      Y.applyUpdate(document, legacyJsonUpdate(LEGACY_CLIENT, Y.getState(document.store, LEGACY_CLIENT), change.values))
    } else {
      if (synced) Y.applyUpdate(doc, Y.encodeStateAsUpdate(document, Y.encodeStateVector(doc)))
      make(doc, change)
      Y.applyUpdate(document, Y.encodeStateAsUpdate(doc, Y.encodeStateVector(document)))
    }
    afterEach?.(document)
  }
  return document
}

/** What a joining client states it holds of one of the room's clients: nothing, a clock from 0 to past the room's, or the room's. */
const holding = fc.record({ kind: fc.constantFrom('absent' as const, 'zero' as const, 'inside' as const, 'inside' as const, 'all' as const, 'ahead' as const), pick: fc.nat() })

/** A state vector holding each of the room's clients as `holdings` say (cycled), and clients the room does not know. */
function heldState(document: Y.Doc, holdings: readonly { kind: string; pick: number }[], strangers: number): Map<number, number> {
  const held = new Map<number, number>()
  for (const [i, [client, clock]] of [...Y.decodeStateVector(Y.encodeStateVector(document))].entries()) {
    const { kind, pick } = holdings[i % holdings.length] as { kind: string; pick: number }
    if (kind === 'zero') held.set(client, 0)
    else if (kind === 'inside') held.set(client, pick % (clock + 1))
    else if (kind === 'all') held.set(client, clock)
    else if (kind === 'ahead') held.set(client, clock + 1 + (pick % 5_000))
  }
  for (let i = 0; i < strangers; i++) held.set(4_000_000_000 - i * 77_777, 1 + i * 300)
  return held
}

const ratios: number[] = []

afterAll(() => {
  if (ratios.length === 0) return
  const sorted = [...ratios].sort((a, b) => a - b)
  const median = sorted[Math.floor(sorted.length / 2)] as number
  console.log(`weight / bytes sent over ${sorted.length} answers to lacking clients: median ${median.toFixed(4)}, worst ${(sorted.at(-1) as number).toFixed(4)}, best ${(sorted[0] as number).toFixed(4)}`)
})

describe('joinAnswerBytes for a client lacking some of the room', () => {
  const NAME = 'weighs the answer at no less than what Hocuspocus sends, its update to the byte, whatever the client holds (seeded)'
  it(NAME, () => {
    assertSeeded(
      fc.property(
        fc.uniqueArray(fc.nat({ max: 2 ** 32 - 1 }), { minLength: 1, maxLength: 4 }),
        fc.array(step, { minLength: 1, maxLength: 50 }),
        fc.boolean(),
        fc.array(fc.tuple(fc.array(holding, { minLength: 1, maxLength: 4 }), fc.nat({ max: 2 })), { minLength: 1, maxLength: 4 }),
        (writerIds, steps, gc, helds) => {
          const document = written(writerIds, steps, gc)
          for (const [holdings, strangers] of helds) {
            const held = Y.encodeStateVector(heldState(document, holdings, strangers))
            const decoded = Y.decodeStateVector(held)
            const update = Y.encodeStateAsUpdate(document, held).byteLength
            expect(answerUpdateBytes(document, decoded)).toBe(update)
            const weight = joinAnswerBytes(document, ROOM, decoded, held.byteLength) as number
            const sent = answerBytes(document, held)
            expect(weight).toBeGreaterThanOrEqual(sent)
            // Exact for a client lacking something; one lacking nothing has the room's state
            // vector weighed at its own (no shorter).
            const lacksNothing = [...Y.decodeStateVector(Y.encodeStateVector(document))].every(([client, clock]) => (decoded.get(client) ?? 0) >= clock)
            if (lacksNothing) expect(weight - sent).toBeLessThanOrEqual(held.byteLength - Y.encodeStateVector(document).byteLength + 1)
            else {
              expect(weight).toBe(sent)
              ratios.push(weight / sent)
            }
          }
        },
      ),
      FILE,
      NAME,
      150,
    )
  })

  const KEPT =
    'measures the room to the byte after each change, for a first join and one stating clock 1 of each writer (what it measured before is kept across changes: entries appended, overwritten and deleted, recent and old, own and other writers\', text deleted inside a run, a map collected with its entries) (seeded)'
  it(KEPT, () => {
    // Half the changes overwrite or delete: what a change alters of the structs measured before.
    const overwrite = change.filter((made) => made.op === 'set' || made.op === 'unset' || made.op === 'erase' || made.op === 'drop' || made.op === 'set inside')
    const keptStep = fc.record({ writer: fc.nat({ max: 3 }), synced: fc.boolean(), change: fc.oneof(change, overwrite) })
    assertSeeded(
      fc.property(fc.uniqueArray(fc.nat({ max: 2 ** 32 - 1 }), { minLength: 1, maxLength: 4 }), fc.array(keptStep, { minLength: 1, maxLength: 60 }), fc.boolean(), (writerIds, steps, gc) => {
        written(writerIds, steps, gc, (document) => {
          const clients = [...Y.decodeStateVector(Y.encodeStateVector(document)).keys()]
          for (const held of [new Map<number, number>(), new Map(clients.map((client) => [client, 1]))]) {
            expect(answerUpdateBytes(document, held)).toBe(Y.encodeStateAsUpdate(document, Y.encodeStateVector(held)).byteLength)
          }
        })
      }),
      FILE,
      KEPT,
      150,
    )
  })

  it('measures to the byte a writer whose next entries arrive collected (a GC), merged into its last one', () => {
    // What a peer that collected a writer's deleted entries sends: a GC struct from `clock` on.
    const collected = (clock: number, length: number): Uint8Array => {
      const encoder = encoding.createEncoder()
      encoding.writeVarUint(encoder, 1)
      encoding.writeVarUint(encoder, 1)
      encoding.writeVarUint(encoder, 21)
      encoding.writeVarUint(encoder, clock)
      encoding.writeUint8(encoder, 0)
      encoding.writeVarUint(encoder, length)
      encoding.writeVarUint(encoder, 0)
      return encoding.toUint8Array(encoder)
    }
    const document = new Y.Doc()
    Y.applyUpdate(document, collected(0, 100))
    // The deletions' range grows past 127: one more byte.
    for (const clock of [100, 200]) {
      expect(answerUpdateBytes(document, new Map())).toBe(Y.encodeStateAsUpdate(document).byteLength)
      Y.applyUpdate(document, collected(clock, 100))
      expect(document.store.clients.get(21)).toHaveLength(1)
    }
    expect(answerUpdateBytes(document, new Map())).toBe(Y.encodeStateAsUpdate(document).byteLength)
  })

  it('measures a client holding part of a struct from its clock on, a character split in two as the encoder writes it', () => {
    const writer = new Y.Doc()
    writer.clientID = 7
    writer.getText('notes').insert(0, 'a😀é€中😀')
    const document = new Y.Doc()
    Y.applyUpdate(document, Y.encodeStateAsUpdate(writer))
    const end = Y.getState(document.store, 7)
    for (let clock = 0; clock <= end + 2; clock++) {
      const held = Y.encodeStateVector(new Map([[7, clock]]))
      expect(answerUpdateBytes(document, Y.decodeStateVector(held)), `held at clock ${clock}`).toBe(Y.encodeStateAsUpdate(document, held).byteLength)
    }
  })

  it('measures a client lacking more than a few structs of a writer from its clock on, wherever the clock falls', () => {
    // Runs of text and entries, some deleted, past the structs read one by one at each look: the
    // measure takes the writer's running totals.
    const writer = new Y.Doc()
    writer.clientID = 9
    const notes = writer.getText('notes')
    const log = writer.getArray<unknown>('log')
    for (let i = 0; i < 300; i++) {
      notes.insert(notes.length, `r${i}😀é`)
      log.push([i, { at: i, label: `é${i}` }])
      if (i % 7 === 0) notes.delete(Math.floor(notes.length / 2), 3)
    }
    const document = new Y.Doc()
    Y.applyUpdate(document, Y.encodeStateAsUpdate(writer))
    expect((document.store.clients.get(9) as unknown[]).length).toBeGreaterThan(300)
    const end = Y.getState(document.store, 9)
    for (let clock = 0; clock <= end; clock++) {
      const held = Y.encodeStateVector(new Map([[9, clock]]))
      expect(answerUpdateBytes(document, Y.decodeStateVector(held)), `held at clock ${clock}`).toBe(Y.encodeStateAsUpdate(document, held).byteLength)
    }
  })

  it('reads a writer once per change of the room for 300 looks at joins stating a clock near its start, not once a look', () => {
    const { document } = settingsRoom()
    const structs = document.store.clients.get(11) as (Y.Item | Y.GC)[]
    // Counts every read of one of the room's structs by index.
    const counted = countStructReads(document, 11)
    // A client stating clock 1 (it holds the room's first entry) lacks the whole room but one
    // entry; its answer waits and is weighed again at each look of its socket's guard.
    const statedClocks = [1, 2, 50_000]
    const sent = statedClocks.map((clock) => Y.encodeStateAsUpdate(document, Y.encodeStateVector(new Map([[11, clock]]))).byteLength)
    counted.reads = 0
    for (const clock of statedClocks) answerUpdateBytes(document, new Map([[11, clock]]))
    const once = counted.reads
    for (let i = 0; i < 300; i++) {
      const at = i % statedClocks.length
      expect(answerUpdateBytes(document, new Map([[11, statedClocks[at] as number]]))).toBe(sent[at])
    }
    const perLook = (counted.reads - once) / 300
    console.log(`300 looks at joins stating clocks ${statedClocks.join(', ')} of ${structs.length} structs: ${once} struct reads first, then ${perLook.toFixed(1)} a look`)
    // A binary search and the first struct lacked: a few dozen reads a look, not the room.
    expect(perLook).toBeLessThan(40)
  })

  it('reads only the entries a device appends to a room of 100,000 entries for a first join weighed after each append, not the room again', () => {
    const device = new Y.Doc()
    device.clientID = 11
    const log = device.getArray<number>('log')
    device.transact(() => {
      for (let i = 0; i < 100_000; i++) log.insert(0, [i])
    })
    const document = new Y.Doc()
    Y.applyUpdate(document, Y.encodeStateAsUpdate(device))
    const structs = document.store.clients.get(11) as (Y.Item | Y.GC)[]
    // Counts every read of one of the room's structs by index.
    const counted = countStructReads(document, 11)
    answerUpdateBytes(document, new Map())
    let measureReads = 0
    for (let i = 0; i < 10; i++) {
      const before = Y.encodeStateVector(document)
      log.push([i])
      Y.applyUpdate(document, Y.encodeStateAsUpdate(device, before))
      const start = counted.reads
      const weight = answerUpdateBytes(document, new Map())
      measureReads += counted.reads - start
      expect(weight).toBe(Y.encodeStateAsUpdate(document).byteLength)
    }
    // Each append's measure reads the entry appended and the writer's last before it (the first
    // may be merged into it), for its bytes and its deletions: not the room.
    console.log(`10 appends to ${structs.length} structs, a first join weighed after each: ${(measureReads / 10).toFixed(0)} struct reads an append`)
    expect(measureReads / 10).toBeLessThan(40)
  })

  it('reads what 1,000 rejoining clients lack of a room of 100,000 structs, not the room 1,000 times; 1,000 first joins read it once', () => {
    const { device, settings, document } = settingsRoom()
    const before = Y.encodeStateVector(document)
    // The device writes a few readings while the clients are away, and deletes one.
    for (let i = 0; i < 3; i++) settings.set(`new${i}`, i)
    settings.delete('k5')
    Y.applyUpdate(document, Y.encodeStateAsUpdate(device, before))
    const structs = document.store.clients.get(11) as (Y.Item | Y.GC)[]
    expect(structs.length).toBeGreaterThan(100_000)
    // Counts every read of one of the room's structs by index.
    const counted = countStructReads(document, 11)
    const expected = Y.encodeStateAsUpdate(document, before).byteLength
    const held = Y.decodeStateVector(before)
    // The room's delete set, walked once for all of them.
    answerUpdateBytes(document, held)
    const walk = counted.reads
    expect(walk).toBeGreaterThanOrEqual(100_000)
    for (let i = 0; i < 1_000; i++) {
      const weight = joinAnswerBytes(document, ROOM, Y.decodeStateVector(before), before.byteLength) as number
      expect(weight).toBeGreaterThanOrEqual(expected)
      expect(weight).toBeLessThan(expected + 64)
    }
    console.log(`1,000 rejoins lacking 3 structs of ${structs.length}: ${counted.reads - walk} struct reads after the delete set's walk (${walk})`)
    // A binary search and the structs lacked: a few dozen reads a client.
    expect(counted.reads - walk).toBeLessThan(1_000 * 40)
    // 1,000 first joins, each weighed at the whole room: its structs are read once for them all,
    // until the room changes.
    const empty = Y.encodeStateVector(new Y.Doc())
    const whole = Y.encodeStateAsUpdate(document, empty).byteLength
    const firstJoin = () => answerUpdateBytes(document, Y.decodeStateVector(empty))
    counted.reads = 0
    expect(firstJoin()).toBe(whole)
    const once = counted.reads
    expect(once).toBeGreaterThanOrEqual(100_000)
    for (let i = 0; i < 1_000; i++) expect(firstJoin()).toBe(whole)
    // A look at the writer's last struct (its clock) a join.
    expect(counted.reads - once).toBeLessThanOrEqual(1_000)
    settings.set('after', 1)
    Y.applyUpdate(document, Y.encodeStateAsUpdate(device, Y.encodeStateVector(document)))
    expect(firstJoin()).toBe(Y.encodeStateAsUpdate(document, empty).byteLength)
    expect(counted.reads).toBeGreaterThanOrEqual(2 * once)
  })
})
