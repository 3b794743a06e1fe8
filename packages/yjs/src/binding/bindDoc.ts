import type { ReplicaPort } from '@tidemark/engine'
import type * as Y from 'yjs'
import { type BindDocOptions, checkBindDocOptions } from './bindDocOptions.ts'
import { type DocBinding, DocReplication } from './docReplication.ts'

/**
 * Puts an engine's lattice state into `doc` and merges what peers write there: publishes the
 * engine's local writes (each once it is durable, with a write-ahead log) and hands peers'
 * entries to the engine after checking their shape. An engine from `openEngine` is bound once
 * it has recovered, so peers' state merged from then on is logged too.
 *
 * @example
 * const engine = createEngine({ windows: tumbling(60_000) })
 * const doc = new Y.Doc()
 * const binding = bindDoc(engine, doc, { onError: (e) => console.warn(e.message) })
 * new BroadcastChannelProvider(doc, 'tidemark:fleet') // tabs of this origin now share the state
 * // later: binding.destroy(), or engine.close()
 */
export function bindDoc(engine: { readonly replica: ReplicaPort }, doc: Y.Doc, options: BindDocOptions = {}): DocBinding {
  if (typeof engine !== 'object' || engine === null || typeof engine.replica !== 'object' || engine.replica === null) {
    throw new TypeError('bindDoc: engine must be an engine (createEngine or openEngine)')
  }
  if (typeof doc !== 'object' || doc === null || typeof doc.getMap !== 'function' || typeof doc.transact !== 'function') throw new TypeError('bindDoc: doc must be a Y.Doc')
  checkBindDocOptions(options)
  return new DocReplication(engine.replica, doc, options)
}
