import { expect, test } from '@playwright/test'
import { runStorm, stormSeed, tumblingTruth } from '@tidemark/storm'
import { startSyncServer } from '@tidemark/sync-server'

test('my app survives a reconnect storm', async ({ browser, baseURL }) => {
  const storm = await runStorm({
    browser,
    baseURL: baseURL as string,
    path: '/storm-example.html', // the page below
    server: () => startSyncServer(), // started for this storm, stopped by close(); or pass a URL
    truth: tumblingTruth({ windowMs: 1_000, allowedLateness: 2_000 }), // the page's engine options
    seed: stormSeed(), // STORM_SEED=<seed> replays a run
    seconds: 10,
    devices: 3,
    dashboards: 1,
  })
  try {
    console.log(storm.summary()) // seed, toggles intended vs seen, produced, counted, late lane, convergence
    expect(storm.problems).toEqual([]) // nothing lost, nothing counted twice, every page on the ground truth
  } finally {
    await storm.close()
  }
})
