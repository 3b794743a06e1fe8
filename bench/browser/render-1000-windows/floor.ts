/**
 * The floor of render-1000-windows: the same tiles updated with no engine,
 * no bindings and no React. A running mean per key in two typed arrays, and
 * once per animation frame the text (or canvas cell) of every tile whose key
 * changed since the last one. It does the DOM or canvas work the workload
 * needs and the least JavaScript around it, so it shows what the browser
 * alone costs; the distance to it is what the engine, the bindings and React
 * add. It is a lower bound, not a competitor: no dedup, watermark, windows,
 * lateness or corrections.
 */
import type { StreamEvent } from '@tidemark/engine'

export interface FloorOptions {
  readonly keys: readonly string[]
  /** Shows tile `index` with `text`. */
  readonly paint: (index: number, text: string) => void
  /** Called once per painted tile, as the React tiles call it once per render. */
  readonly countRender: (index: number) => void
}

export interface Floor {
  /** Adds `events` to their keys' means and asks for a frame. */
  ingest(events: readonly StreamEvent[]): void
  /** Keys that hold at least one event. */
  readonly keysWithValue: number
}

export function startFloor({ keys, paint, countRender }: FloorOptions): Floor {
  const indexOf = new Map(keys.map((key, index) => [key, index]))
  const sums = new Float64Array(keys.length)
  const counts = new Uint32Array(keys.length)
  const dirty = new Uint8Array(keys.length)
  const changed: number[] = []
  let requested = false

  const frame = (): void => {
    requested = false
    for (const index of changed) {
      dirty[index] = 0
      paint(index, ((sums[index] as number) / (counts[index] as number)).toFixed(1))
      countRender(index)
    }
    changed.length = 0
  }

  return {
    ingest(events) {
      for (const event of events) {
        const index = indexOf.get(event.key ?? '')
        if (index === undefined) continue
        sums[index] = (sums[index] as number) + event.value
        counts[index] = (counts[index] as number) + 1
        if (dirty[index] === 0) {
          dirty[index] = 1
          changed.push(index)
        }
      }
      if (!requested && changed.length > 0) {
        requested = true
        requestAnimationFrame(frame)
      }
    },
    get keysWithValue() {
      return counts.reduce((n, c) => n + (c > 0 ? 1 : 0), 0)
    },
  }
}
