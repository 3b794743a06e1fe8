/** Runs `fn` `runs` times after `warmup` runs and reports the median and spread of its duration. */
export function timeRuns(fn: () => void, runs = 5, warmup = 2): { medianMs: number; minMs: number; maxMs: number } {
  for (let i = 0; i < warmup; i++) fn()
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now()
    fn()
    times.push(performance.now() - t0)
  }
  times.sort((a, b) => a - b)
  return { medianMs: times[Math.floor(times.length / 2)] as number, minMs: times[0] as number, maxMs: times[times.length - 1] as number }
}

export function perSecond(count: number, ms: number): number {
  return Math.round((count / ms) * 1000)
}

/** True when the module is the script node was started with. */
export function isMain(url: string): boolean {
  const entry = process.argv[1]
  return entry !== undefined && url === new URL(`file://${entry}`).href
}
