/**
 * The README's sample ("Storming your own app"), kept here so the type checker holds it to
 * the driver's API. Copy it into your own Playwright suite (testDir), fix the import path,
 * and point `path` at a page of your app that implements `StormPageApi`.
 */
import { expect, test } from '@playwright/test'
import { runStorm, startSyncServer, stormSeed } from './index.ts'

test('my app survives a reconnect storm', async ({ browser, baseURL }) => {
  const server = await startSyncServer() // 127.0.0.1, a free port, stopped by its PID
  const storm = await runStorm({
    browser,
    baseURL: baseURL as string,
    serverUrl: server.url,
    seconds: 60,
    seed: stormSeed(), // STORM_SEED=<seed> replays a run
    path: '/storm.html', // your page
  })
  try {
    console.log(storm.summary()) // seed, pages, toggles (intended vs seen), produced, counted, late lane, convergence
    expect(storm.problems).toEqual([]) // nothing lost, nothing counted twice, every page on the ground truth
  } finally {
    await storm.close()
    await server.stop()
  }
})
