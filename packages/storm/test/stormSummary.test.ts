import { describe, expect, it } from 'vitest'
import { distribution } from '../src/driver/distribution.ts'
import { StormLedger } from '../src/driver/stormLedger.ts'
import type { StormFigures } from '../src/driver/stormResult.ts'
import { describeStorm } from '../src/driver/stormSummary.ts'

const d = distribution([50, 270, 450])
const figures: StormFigures = {
  seed: 42,
  seconds: 10,
  pages: 4,
  devices: 3,
  dashboards: 1,
  ingest: { batch: 20, everyMs: 200 },
  stormMs: 10_002,
  network: 'partition',
  toggles: { issued: 3, acknowledged: 3, observed: 3, perDevice: [{ issued: 1, observed: 1, maxInFlight: 1 }], intendedMs: d, issueLagMs: d, ackMs: d, observedMs: d, observedLagMs: d },
  truth: { produced: 100, counted: 97, lateLane: 3, digest: '', windows: 5, problems: [] },
  devicesShow: 'own',
  deviceTruths: {},
  receipts: { accepted: 97, beyondLateness: 3, duplicates: 0, rejected: 0 },
  gaps: [],
  dashboardCounts: [97],
  converged: true,
  convergenceMs: 250,
  snapshots: [],
  ledger: new StormLedger(),
  problems: [],
}

describe('describeStorm', () => {
  it('prints the seed with its replay command, pages, toggles, events and convergence', () => {
    expect(describeStorm(figures).split('\n')).toEqual([
      'storm seed=42 (replay: STORM_SEED=42) seconds=10 stormMs=10002 network=partition pages=4 (3 devices in their own contexts, 1 dashboard tab) ingest=20 every 200 ms',
      'toggles: issued=3 acknowledged=3 seen by pages=3 (per device issued/seen/max in flight: 1/1/1)',
      '  intended interval  n=3 min 50 p50 270 p90 450 p99 450 max 450 ms',
      '  page-seen interval n=3 min 50 p50 270 p90 450 p99 450 max 450 ms',
      '  issue lag          n=3 min 50 p50 270 p90 450 p99 450 max 450 ms',
      '  switch ack         n=3 min 50 p50 270 p90 450 p99 450 max 450 ms',
      '  issue→page event   n=3 min 50 p50 270 p90 450 p99 450 max 450 ms',
      'events: produced=100 counted=97 lateLane=3 (receipts: accepted=97 beyondLateness=3 duplicates=0 rejected=0) windows=5 dashboards=[97]',
      'converged=true convergenceMs=250 (after the last device was back online; dashboards on the ground truth, devices on their own readings) problems=0',
    ])
  })
})
