// Plain Node, plain ESM: the engine from the installed tarball, no bundler, no DOM.
import { createEngine, tumbling } from '@tidemark/engine'
import { compareResults } from '@tidemark/engine/adapter'

const engine = createEngine({ windows: tumbling(1000), now: () => 0 })
const receipt = engine.ingest([
  { id: 'r1', source: 'sensor', seq: 1, ts: 100, value: 20 },
  { id: 'r2', source: 'sensor', seq: 2, ts: 900, value: 22 },
  { id: 'r3', source: 'sensor', seq: 3, ts: 1500, value: 30 },
  { id: 'r3', source: 'sensor', seq: 3, ts: 1500, value: 30 },
])
engine.tick()
for (const r of [...engine.results()].sort(compareResults)) {
  console.log(`window ${r.window} [${r.start}, ${r.end}): count=${r.count} sum=${r.sum} mean=${r.mean} status=${r.status} basis=${r.basis}`)
}
console.log(`accepted=${receipt.accepted} duplicates=${receipt.duplicates}`)
await engine.close()

// Typechecked with checkJs (tsconfig.node.json): were the package's types missing, this
// directive would have no error to expect and the check would fail. Never called.
export const typesAreLoaded = () =>
  // @ts-expect-error tumbling takes the window size as a number of ms
  tumbling('1 second')
