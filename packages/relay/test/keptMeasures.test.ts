/**
 * What the join answer's weight (`joinAnswer.ts`) keeps of a room's writers across changes
 * (`keptMeasures.ts`): a change has only the structs from the first it could have altered read
 * again, so a device overwriting its recent entries costs a read of those entries, not of the
 * writer; and the weight stays the answer's size to the byte when a change's garbage collection
 * replaces entries Yjs names nowhere (a map's earlier entries, by other writers).
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { seededRandom } from '@tidemark/seeded-random'
import { assertSeeded, numRuns, seed } from '@tidemark/seeded-random/property'
import { answerUpdateBytes } from '../src/gate/joinAnswer.ts'
import { countStructReads, settingsRoom, settingsWriters } from './support/answerMeasures.ts'

const FILE = 'packages/relay/test/keptMeasures.test.ts'

/** A first join and one holding the room's first entry (clock 1): both weighed from the writer's kept measures. */
const JOINS = [new Map<number, number>(), new Map([[11, 1]])]

/** Makes `change` on the device, syncs it into the room, then weighs `JOINS` against the encoded answer: the struct reads of the weighs. */
function readsAfter(room: ReturnType<typeof settingsRoom>, counted: { reads: number }, change: () => void): number {
  const before = Y.encodeStateVector(room.document)
  room.device.transact(change)
  Y.applyUpdate(room.document, Y.encodeStateAsUpdate(room.device, before))
  const sent = JOINS.map((held) => Y.encodeStateAsUpdate(room.document, Y.encodeStateVector(held)).byteLength)
  const start = counted.reads
  const weights = JOINS.map((held) => answerUpdateBytes(room.document, held))
  const reads = counted.reads - start
  expect(weights).toEqual(sent)
  return reads
}

/** A change of a room whose device (client 11) wrote many settings, a log and notes: by the device or another writer (12, 13). */
type Rewrite =
  | { readonly op: 'overwrite' | 'delete'; readonly writer: number; readonly recent: boolean; readonly pick: number }
  | { readonly op: 'erase' | 'trim'; readonly writer: number; readonly at: number; readonly count: number }
  | { readonly op: 'type' | 'append'; readonly at: number; readonly count: number }

const rewrite: fc.Arbitrary<Rewrite> = fc.oneof(
  fc.record({ op: fc.constantFrom('overwrite' as const, 'delete' as const), writer: fc.nat({ max: 2 }), recent: fc.boolean(), pick: fc.nat() }),
  fc.record({ op: fc.constantFrom('erase' as const, 'trim' as const), writer: fc.nat({ max: 2 }), at: fc.nat(), count: fc.integer({ min: 1, max: 12 }) }),
  fc.record({ op: fc.constantFrom('type' as const, 'append' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 6 }) }),
)

/** Makes `change` on `doc` (synced with the room), whose device wrote `keys` settings first. */
function rewritten(doc: Y.Doc, keys: number, change: Rewrite): void {
  const settings = doc.getMap<number>('settings')
  const notes = doc.getText('notes')
  const log = doc.getArray<number>('log')
  switch (change.op) {
    case 'overwrite':
    case 'delete': {
      const key = `k${change.recent ? keys - 1 - (change.pick % 12) : change.pick % keys}`
      if (change.op === 'overwrite') settings.set(key, change.pick)
      else settings.delete(key)
      return
    }
    case 'erase':
    case 'trim': {
      const list = change.op === 'erase' ? notes : log
      if (list.length === 0) return
      const at = change.at % list.length
      list.delete(at, Math.min(change.count, list.length - at))
      return
    }
    case 'type':
      notes.insert(change.at % (notes.length + 1), 'é😀x'.repeat(change.count))
      return
    case 'append':
      for (let i = 0; i < change.count; i++) settings.set(`new${change.at % 7}-${i}`, i)
      log.push(Array.from({ length: change.count }, (_, i) => i))
      return
  }
}

/** A room weighed for a first join, one stating clock 1 of each writer and one stating a clock inside each writer: each exactly the encoded answer's size. */
function expectMeasured(room: Y.Doc, random: () => number, context: string): void {
  if (room.store.pendingStructs !== null || room.store.pendingDs !== null) return
  const state = Y.decodeStateVector(Y.encodeStateVector(room))
  const helds = [new Map<number, number>(), new Map([...state.keys()].map((client) => [client, 1])), new Map([...state].map(([client, clock]) => [client, Math.floor(random() * (clock + 1))]))]
  for (const held of helds) {
    expect(answerUpdateBytes(room, held), `${context}, held ${JSON.stringify([...held])}`).toBe(Y.encodeStateAsUpdate(room, Y.encodeStateVector(held)).byteLength)
  }
}

/** A writer's change, drawn from `random`: formatted text, formats, nested types written and replaced, lists, XML. */
function madeChange(doc: Y.Doc, random: () => number): void {
  const int = (n: number): number => Math.floor(random() * n)
  const notes = doc.getText('notes')
  const settings = doc.getMap<unknown>('settings')
  const log = doc.getArray<unknown>('log')
  const within = (length: number): [number, number] => {
    const at = int(length)
    return [at, 1 + int(Math.min(5, length - at))]
  }
  switch (int(11)) {
    case 0:
      notes.insert(int(notes.length + 1), 'ab😀cd'.slice(0, 1 + int(6)), random() < 0.5 ? { bold: random() < 0.5 ? true : null } : {})
      return
    case 1:
      if (notes.length > 0) notes.format(...within(notes.length), { bold: random() < 0.5 ? true : null, italic: random() < 0.3 ? true : null })
      return
    case 2:
      if (notes.length > 0) notes.delete(...within(notes.length))
      return
    case 3: {
      const kind = int(4)
      settings.set(`k${int(4)}`, kind === 0 ? int(100) : kind === 1 ? new Y.Map() : kind === 2 ? new Y.Text(`x${int(9)}`) : new Y.Array())
      return
    }
    case 4:
      settings.delete(`k${int(4)}`)
      return
    case 5: {
      const entry = settings.get(`k${int(4)}`)
      if (entry instanceof Y.Map) entry.set(`n${int(3)}`, random() < 0.3 ? new Y.Map() : int(50))
      else if (entry instanceof Y.Text) entry.insert(int(entry.length + 1), 'q', random() < 0.4 ? { bold: true } : {})
      else if (entry instanceof Y.Array) entry.insert(int(entry.length + 1), [int(9), new Y.Map()])
      return
    }
    case 6: {
      const entry = settings.get(`k${int(4)}`)
      const inner = entry instanceof Y.Map ? entry.get(`n${int(3)}`) : entry instanceof Y.Array && entry.length > 0 ? entry.get(int(entry.length)) : null
      if (inner instanceof Y.Map) inner.set(`z${int(3)}`, int(9))
      return
    }
    case 7:
      log.insert(int(log.length + 1), Array.from({ length: 1 + int(5) }, () => int(9)))
      return
    case 8:
      if (log.length > 0) log.delete(...within(log.length))
      return
    case 9: {
      const xml = doc.getXmlFragment('xml')
      const element = new Y.XmlElement('p')
      element.setAttribute('level', `${int(9)}`)
      element.insert(0, [new Y.XmlText('hi')])
      xml.insert(int(xml.length + 1), [element])
      if (xml.length > 2 && random() < 0.5) xml.delete(int(xml.length - 1), 1)
      return
    }
    default:
      log.insert(int(log.length + 1), [new Y.Map([['q', 1]]), new Y.Text('zz')])
  }
}

describe('the measures a join answer is weighed from, kept across changes of the room', () => {
  const CLEANUPS =
    'measures a room to the byte after remote changes whose cleanup writes (formats cleaned up, observers writing back), undone and redone changes, items kept from collection, gc switched, updates held back (seeded)'
  it(CLEANUPS, () => {
    const SEEDS = numRuns(60)
    for (let run = seed; run < seed + SEEDS; run++) {
      const random = seededRandom(run)
      const int = (n: number): number => Math.floor(random() * n)
      try {
        const variant = int(4)
        const gc = random() < 0.7
        // Items of every third clock kept from collection; an observer writing back into the
        // settings; an `afterTransaction` listener trimming the notes after remote changes.
        const room = new Y.Doc(variant === 1 ? { gc, gcFilter: (item) => item.id.clock % 3 !== 0 } : { gc })
        room.clientID = 99
        if (variant === 2) {
          room.getMap<unknown>('settings').observeDeep(() => {
            if (random() < 0.5) {
              const entry = room.getMap<unknown>('settings').get(`k${int(4)}`)
              if (entry instanceof Y.Map) entry.set('seen', int(9))
              else room.getMap<unknown>('settings').set(`k${int(4)}`, random() < 0.5 ? int(5) : new Y.Map([['o', 1]]))
            }
          })
        }
        if (variant === 3) {
          room.on('afterTransaction', (transaction: Y.Transaction) => {
            const notes = room.getText('notes')
            if (!transaction.local && notes.length > 1 && random() < 0.3) room.transact(() => notes.delete(int(notes.length - 1), 1))
          })
        }
        const writers = [1, 2, 3].map((client) => {
          const doc = new Y.Doc({ gc: random() < 0.7 })
          doc.clientID = client
          return doc
        })
        const [device] = writers as [Y.Doc]
        const undo = new Y.UndoManager([device.getText('notes'), device.getMap('settings'), device.getArray('log')], { captureTimeout: 0 })
        // Half the rooms start with a writer of hundreds of structs (several deletion walk checkpoints).
        if (random() < 0.5) {
          const big = writers[int(3)] as Y.Doc
          for (let i = 0; i < 200 + int(200); i++) {
            if (random() < 0.5) big.getMap<unknown>('settings').set(`p${i}`, i)
            else big.getText('notes').insert(int(big.getText('notes').length + 1), `w${i}`)
          }
          Y.applyUpdate(room, Y.encodeStateAsUpdate(big))
        }
        expectMeasured(room, random, 'first')
        const heldBack: Uint8Array[] = []
        for (let step = 0; step < 120; step++) {
          const writer = writers[int(3)] as Y.Doc
          if (random() < 0.8) Y.applyUpdate(writer, Y.encodeStateAsUpdate(room, Y.encodeStateVector(writer)))
          const before = Y.encodeStateVector(writer)
          const undoing = writer === device ? int(6) : 0
          if (undoing === 1) undo.undo()
          else if (undoing === 2) undo.redo()
          else writer.transact(() => madeChange(writer, random))
          if (random() < 0.15) heldBack.push(Y.encodeStateAsUpdate(writer, before))
          else {
            Y.applyUpdate(room, Y.encodeStateAsUpdate(writer, Y.encodeStateVector(room)), 'remote')
            expectMeasured(room, random, `step ${step}`)
          }
          if (heldBack.length > 0 && random() < 0.3) {
            Y.applyUpdate(room, heldBack.shift() as Uint8Array, 'remote')
            expectMeasured(room, random, `step ${step}, an update held back`)
          }
          if (random() < 0.03) room.gc = !room.gc
        }
        for (const update of heldBack) Y.applyUpdate(room, update, 'remote')
        expectMeasured(room, random, 'last')
      } catch (error) {
        const message = `seed ${run}\nrepro: TIDEMARK_SEED=${run} npx vitest run --project relay ${FILE} -t ${JSON.stringify(CLEANUPS)}`
        console.error(message)
        throw new Error(`${message}\n${error instanceof Error ? error.message : String(error)}`, { cause: error })
      }
    }
  })

  it('weighs a room to the byte when first weighed from an observer of a change whose collection replaces other writers\' entries', () => {
    const room = new Y.Doc()
    const sync = settingsWriters(room)
    const [owner, first, second] = [1, 2, 3]
    sync(owner, (settings) => settings.set('alarm', new Y.Map()))
    sync(first, (settings) => (settings.get('alarm') as Y.Map<number>).set('threshold', 40))
    sync(second, (settings) => (settings.get('alarm') as Y.Map<number>).set('threshold', 45))
    // The first weigh of the room comes from an observer of the change overwriting the map: after
    // that change's `beforeObserverCalls`, before its collection replaces the first writer's entry.
    let weighedFirst = false
    room.getMap('settings').observe(() => {
      if (!weighedFirst) answerUpdateBytes(room, new Map())
      weighedFirst = true
    })
    sync(owner, (settings) => settings.set('alarm', 0))
    expect(weighedFirst).toBe(true)
    expect(room.store.clients.get(2)?.[0]).toBeInstanceOf(Y.GC)
    for (const held of [new Map<number, number>(), new Map([[1, 1]])]) {
      expect(answerUpdateBytes(room, held)).toBe(Y.encodeStateAsUpdate(room, Y.encodeStateVector(held)).byteLength)
    }
  })

  const REWRITES =
    'measures a room of a device\'s hundreds of entries to the byte after each change of its recent or old entries, by it or by others, for joins lacking most of the device (seeded)'
  it(REWRITES, () => {
    assertSeeded(
      fc.property(fc.integer({ min: 150, max: 400 }), fc.boolean(), fc.array(rewrite, { minLength: 1, maxLength: 30 }), fc.nat(), (keys, gc, changes, pick) => {
        const writers = [11, 12, 13].map((client) => {
          const doc = new Y.Doc({ gc })
          doc.clientID = client
          return doc
        })
        const [device] = writers as [Y.Doc]
        // Each setting a struct of its own; the notes and the log runs, typed and pushed one by one.
        device.transact(() => {
          for (let i = 0; i < keys; i++) device.getMap<number>('settings').set(`k${i}`, i)
        })
        for (let i = 0; i < 40; i++) {
          device.getText('notes').insert(device.getText('notes').length, `r${i}é`)
          device.getArray<number>('log').push([i, i + 1])
        }
        const room = new Y.Doc({ gc })
        Y.applyUpdate(room, Y.encodeStateAsUpdate(device))
        const measured = (): void => {
          const state = Y.decodeStateVector(Y.encodeStateVector(room))
          const inside = (client: number): number => pick % ((state.get(client) ?? 0) + 1)
          for (const held of [new Map<number, number>(), new Map([[11, 1]]), new Map([[11, inside(11)], [12, inside(12)]])]) {
            expect(answerUpdateBytes(room, held)).toBe(Y.encodeStateAsUpdate(room, Y.encodeStateVector(held)).byteLength)
          }
        }
        measured()
        for (const change of changes) {
          const doc = 'writer' in change ? (writers[change.writer] as Y.Doc) : device
          Y.applyUpdate(doc, Y.encodeStateAsUpdate(room, Y.encodeStateVector(doc)))
          rewritten(doc, keys, change)
          Y.applyUpdate(room, Y.encodeStateAsUpdate(doc, Y.encodeStateVector(room)))
          measured()
        }
      }),
      FILE,
      REWRITES,
      60,
    )
  })

  it('reads a few structs, not the writer, when the device overwrites and deletes a few of its recent entries of 100,000', () => {
    const room = settingsRoom()
    const counted = countStructReads(room.document, 11)
    for (const held of JOINS) answerUpdateBytes(room.document, held)
    const reads: number[] = []
    for (let round = 0; round < 10; round++) {
      reads.push(
        readsAfter(room, counted, () => {
          // A batch rewrites the settings it touches: recent entries overwritten, one deleted.
          room.settings.set(`k${99_990 + round}`, -round)
          room.settings.set(`k${99_980 + round}`, -round)
          room.settings.delete(`k${99_970 + round}`)
        }),
      )
    }
    const worst = Math.max(...reads)
    console.log(`10 batches overwriting 2 and deleting 1 of the last 30 entries of 100,000, two joins weighed after each: at most ${worst} struct reads a batch`)
    // Each join's binary searches, and the structs from the first one altered on (about 30) for
    // the totals and for the deletion walk (from its last checkpoint before them): not 100,000.
    expect(worst).toBeLessThan(200)
  })

  it('reads the writer from an old entry on when the device deletes one near its start (a deletion costs the structs after it)', () => {
    const room = settingsRoom()
    const counted = countStructReads(room.document, 11)
    for (const held of JOINS) answerUpdateBytes(room.document, held)
    const reads = readsAfter(room, counted, () => room.settings.delete('k10'))
    console.log(`a deletion of the 11th entry of 100,000, two joins weighed after it: ${reads} struct reads`)
    // The running totals and the deletion walk from the 11th struct on, each once.
    expect(reads).toBeGreaterThan(2 * 99_000)
    expect(reads).toBeLessThan(2 * 100_000 + 400)
  })

  for (const gc of [true, false]) {
    it(`weighs a room to the byte after a setting holding a map is overwritten, the map's earlier entries written by other writers (gc ${gc ? 'on' : 'off'})`, () => {
      const room = new Y.Doc({ gc })
      const sync = settingsWriters(room)
      const [owner, first, second] = [1, 2, 3]
      const weighed = (): void => {
        for (const held of [new Map<number, number>(), new Map([[2, 0]])]) {
          expect(answerUpdateBytes(room, held)).toBe(Y.encodeStateAsUpdate(room, Y.encodeStateVector(held)).byteLength)
        }
      }
      sync(owner, (settings) => settings.set('alarm', new Y.Map()))
      // One writer sets the map's entries, another overwrites them: the first's stay, deleted.
      for (const [writer, value] of [
        [first, 40],
        [second, 45],
      ] as const) {
        sync(writer, (settings) => {
          const alarm = settings.get('alarm') as Y.Map<number>
          alarm.set('threshold', value)
          alarm.set('hold', value)
        })
      }
      weighed()
      // Overwriting the setting deletes the map; collecting it replaces the first writer's
      // entries, which the transaction names nowhere, by GCs, side by side and not merged.
      sync(owner, (settings) => settings.set('alarm', 0))
      weighed()
      // The first writer's next entry, in another map the owner then overwrites: collected, it
      // merges into both, the merge reaching left past the clock before it.
      sync(owner, (settings) => settings.set('siren', new Y.Map()))
      sync(first, (settings) => (settings.get('siren') as Y.Map<number>).set('volume', 3))
      weighed()
      sync(owner, (settings) => settings.set('siren', 0))
      if (gc) expect(room.store.clients.get(2)).toHaveLength(1)
      weighed()
    })
  }
})
