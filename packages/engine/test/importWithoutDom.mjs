/**
 * Child process of builtEngine.test.ts, run by plain Node (no loader, no test runner):
 * removes the browser globals, puts a trap in their place that records every read or write,
 * imports the modules named on the command line, and prints what was touched as JSON.
 * With `--run-engine`, it then runs a tumbling window on the first module's createEngine and
 * reports what that touched separately.
 *
 *   node importWithoutDom.mjs [--run-engine] <module.js>...
 */
import { pathToFileURL } from 'node:url'

const DOM_GLOBALS = [
  'window',
  'self',
  'document',
  'navigator',
  'location',
  'localStorage',
  'sessionStorage',
  'indexedDB',
  'IDBKeyRange',
  'BroadcastChannel',
  'requestAnimationFrame',
  'cancelAnimationFrame',
  'matchMedia',
  'HTMLElement',
  'customElements',
]

let touched = []
for (const name of DOM_GLOBALS) {
  delete globalThis[name]
  Object.defineProperty(globalThis, name, {
    configurable: true,
    get() {
      touched.push(`read ${name}`)
      return undefined
    },
    set() {
      touched.push(`write ${name}`)
    },
  })
}

const args = process.argv.slice(2)
const runEngine = args.includes('--run-engine')
const files = args.filter((arg) => arg !== '--run-engine')
const modules = []
for (const file of files) {
  const namespace = await import(pathToFileURL(file).href)
  modules.push({ file, exports: Object.keys(namespace).sort() })
}
const atImport = touched
touched = []

let run = null
if (runEngine) {
  const { createEngine, tumbling } = await import(pathToFileURL(files[0]).href)
  const engine = createEngine({ windows: tumbling(10), now: () => 0 })
  engine.ingest([
    { id: 'a', source: 'd1', seq: 1, ts: 1, value: 2 },
    { id: 'b', source: 'd1', seq: 2, ts: 4, value: 3 },
    { id: 'c', source: 'd1', seq: 3, ts: 12, value: 5 },
  ])
  engine.tick()
  run = engine.results().map(({ start, end, count, sum }) => ({ start, end, count, sum }))
  await engine.close()
}

process.stdout.write(`${JSON.stringify({ modules, atImport, run, atRun: touched })}\n`)
