/**
 * streaming-250k-watermark-lag (exploratory): the guard's workload scaled up, 250k readings from
 * 25 devices, the slow one ~300 s behind, so the backlog held by the watermark is larger. The
 * question it answers is memory: does the retained heap at the end stay near the live window
 * state (the issue asks for at most 2×), or does pending state pile up? No naive-sort baseline:
 * it is quadratic in the backlog and would take most of the bench's time budget.
 *
 *   node --expose-gc --import tsx --conditions=@tidemark/source bench/streaming-250k-watermark-lag.ts
 */
import type { ProfileDefinition } from './harness/profile.ts'
import { runProfileCli } from './harness/profile.ts'
import { isMain } from './measure.ts'
import { laggingFleetProfile } from './streaming-150k-watermark-lag.ts'

export function define(): ProfileDefinition {
  const profile = laggingFleetProfile(
    'streaming-250k-watermark-lag',
    '250k readings, 25 devices, one 300 s behind, shuffled pushes of 100, 2% 1–20 pushes late; tumbling 10 s + sliding 60 s/10 s, out-of-orderness 2 s, lateness 5 s',
    { events: 250_000, sources: 25, push: 100, spacing: 100, slowBehind: 300_000, delayedShare: 0.02, seed: 250 },
    false,
  )
  // Exploratory and the longest profile: fewer rounds keep `pnpm bench` within its time budget.
  return { ...profile, rounds: 4, warmup: 1 }
}

if (isMain(import.meta.url)) await runProfileCli(define)
