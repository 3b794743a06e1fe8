/**
 * The control of the 10^6-event run: a worker with no Tidemark code that spends `spinMs` of CPU
 * on each batch it is posted (the host's measured time per batch), then answers. The page that
 * feeds it shows what this machine alone makes of a page posting batches to a worker that keeps
 * a core busy: its longest task is the floor for any library that computes off the main thread.
 */
/** From the worker's name, `control-<spinMs>` (a bundled worker's URL carries no query). */
const spinMs = Number(self.name.slice('control-'.length))

if (!(spinMs > 0)) throw new Error(`control worker: name ${self.name} gives no spinMs`)

self.onmessage = (event: MessageEvent<readonly unknown[]>) => {
  const end = performance.now() + spinMs
  while (performance.now() < end) {
    // Busy, as the host is while it ingests.
  }
  self.postMessage(event.data.length)
}
