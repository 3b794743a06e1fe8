import { describe, expect, it } from 'vitest'
import type { StormSnapshot } from '../src/contract/stormPageApi.ts'
import { distribution, formatDistribution } from '../src/driver/distribution.ts'
import type { TruthFigures } from '../src/driver/groundTruth.ts'
import { stormProblems } from '../src/driver/stormProblems.ts'

const truth: TruthFigures = { produced: 10, counted: 9, lateLane: 1, digest: 'tumbling:1000|k0|0|9|9', windows: 1, problems: [] }

function snapshot(overrides: Partial<StormSnapshot> = {}): StormSnapshot {
  return {
    role: 'device',
    source: 'd',
    seed: 1,
    produced: 10,
    durable: 10,
    accepted: 9,
    beyondLateness: 1,
    lateLane: 1,
    lateIds: ['d#3'],
    lateWindows: ['tumbling:1000'],
    lateLaneTrimmed: 0,
    counted: 9,
    digest: truth.digest,
    windows: 1,
    syncState: 'connected',
    pendingLocalUpdates: 0,
    refusal: null,
    online: true,
    invalidRemote: 0,
    remoteAnomalies: [],
    errors: [],
    ...overrides,
  }
}

const passing = {
  truth,
  receipts: { accepted: 9, beyondLateness: 1, duplicates: 0, rejected: 0 },
  totals: { produced: 10, gaps: [] },
  snapshots: [snapshot(), snapshot({ role: 'dashboard', source: 'b' })],
  stopped: [snapshot()],
  converged: true,
}

describe('stormProblems', () => {
  it('finds nothing wrong with a storm where nothing was lost or counted twice', () => {
    expect(stormProblems(passing)).toEqual([])
  })

  it('names every broken expectation, one line each', () => {
    expect(
      stormProblems({
        truth: { ...truth, problems: ['d: late-lane entry d#99 is not a reading it produced'] },
        receipts: { accepted: 8, beyondLateness: 1, duplicates: 1, rejected: 0 },
        totals: { produced: 9, gaps: ['d: seqs 10..10 never reported durable'] },
        snapshots: [snapshot({ errors: ['replication: boom'] }), snapshot({ role: 'dashboard', source: 'b', counted: 8, digest: 'tumbling:1000|k0|0|8|8' })],
        stopped: [snapshot({ durable: 9 })],
        converged: false,
      }),
    ).toEqual([
      'd: seqs 10..10 never reported durable',
      'd: late-lane entry d#99 is not a reading it produced',
      'd: replication: boom',
      'pages did not converge on the ground truth',
      'dashboard b: window values differ from the ground truth (counted 8, truth 9): tumbling:1000|k0|0: expected 9/9, got 8/8',
      'durable reports cover 9 readings, devices produced 10',
      'receipts: accepted 8 + beyond lateness 1 != produced 10',
      'receipts: 1 duplicates, 0 rejected',
      'd: produced 10, durable 9',
    ])
  })
})

describe('distribution', () => {
  it('gives nearest-rank order statistics, and zeros for no values', () => {
    const d = distribution([480, 50, 120])
    expect(d).toEqual({ n: 3, min: 50, p50: 120, p90: 480, p99: 480, max: 480, mean: 216.7 })
    expect(formatDistribution(d)).toBe('n=3 min 50 p50 120 p90 480 p99 480 max 480 ms')
    expect(distribution([])).toEqual({ n: 0, min: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0 })
    expect(distribution(Array.from({ length: 100 }, (_, k) => k + 1))).toMatchObject({ p50: 50, p90: 90, p99: 99, max: 100 })
  })

  it('compares a device with the truth of its own readings when devices show their own', () => {
    const own: TruthFigures = { produced: 4, counted: 4, lateLane: 0, digest: 'tumbling:1000|k0|0|4|4', windows: 1, problems: [] }
    const devices = [snapshot({ digest: own.digest, counted: 4 }), snapshot({ source: 'e', digest: truth.digest })]
    const run = { ...passing, snapshots: [...devices, snapshot({ role: 'dashboard', source: 'b' })], deviceTruths: { d: own, e: own } }
    expect(stormProblems(run)).toEqual([
      'device e: window values differ from the truth of its own readings (counted 9, truth 4): tumbling:1000|k0|0: expected 4/4, got 9/9',
    ])
    // Without deviceTruths, every page is held to the fleet's truth.
    expect(stormProblems({ ...passing, snapshots: run.snapshots })[0]).toMatch(/^device d: window values differ from the ground truth \(counted 4, truth 9\)/)
  })
})
