// CommonJS on Node >= 20.19 (require of an ES module): the "default" export condition serves it.
const { createEngine, tumbling } = require('@tidemark/engine')

const engine = createEngine({ windows: tumbling(1000), now: () => 0 })
engine.ingest([{ id: 'r1', source: 'sensor', seq: 1, ts: 100, value: 20 }])
console.log(`require: ${engine.results().length} window, count=${engine.results()[0]?.count}`)
