/**
 * `pnpm example` (examples/device-stream.ts) prints each batch's summary line first, then the
 * window changes that batch caused.
 */
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ENGINE_DIR = fileURLToPath(new URL('..', import.meta.url))

describe('examples/device-stream.ts', () => {
  it("prints a batch's changes under its summary line", () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--conditions=@tidemark/source', 'examples/device-stream.ts'], {
      cwd: ENGINE_DIR,
      encoding: 'utf8',
    })
    const lines = out.split('\n')
    const at = (prefix: string) => {
      const index = lines.findIndex((line) => line.startsWith(prefix))
      expect(index, `a line starting with '${prefix}'`).toBeGreaterThanOrEqual(0)
      return index
    }
    /** The summary line a line is printed under: the nearest one above it. */
    const batchOf = (prefix: string) => lines.slice(0, at(prefix)).findLast((line) => / events → accepted /.test(line))?.split(':')[0]
    expect(lines[0]).toMatch(/^minute 0: 3 events → accepted 3/)
    // c goes idle at minute 3: that batch fires the first four minutes.
    expect(batchOf('  on time     temp   08:00–08:01')).toBe('minute 3')
    expect(batchOf('  on time     temp   08:04–08:05')).toBe('minute 5')
    expect(batchOf('  correction  temp   08:03–08:04')).toBe('backlog')
    expect(batchOf('  on time     temp   08:05–08:06')).toBe('minute 6')
    // Anomalies come right under their summary, before the changes.
    expect(at('  anomaly invalid_ts at #0')).toBe(at('bad input:') + 1)
  }, 30_000)
})
