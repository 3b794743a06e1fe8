import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, test } from '@playwright/test'
import { startRelay } from '@tidemark/relay'
import { runStorm, type StormServer, stormSeed, tumblingTruth } from '@tidemark/storm'

/** A Tidemark relay for one storm: its store in a temporary directory, development tokens on. */
async function startStormRelay(): Promise<StormServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'storm-relay-'))
  const relay = await startRelay({ port: 0, store: { dataDir }, devTokens: true, auth: { secret: crypto.getRandomValues(new Uint8Array(32)) } })
  return {
    url: relay.url,
    async stop() {
      await relay.close()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

test('my app survives a reconnect storm', async ({ browser, baseURL }) => {
  const storm = await runStorm({
    browser,
    baseURL: baseURL as string,
    path: '/storm-example.html', // the page below
    server: startStormRelay, // started for this storm, stopped by close(); or pass a URL
    // Each page's source and relay token, in its URL: a device writes the room <room>/<source>, a dashboard reads them all.
    params: async ({ role, index, room, serverUrl }) => {
      const source = `example-${role}-${index}`
      const query: Record<string, string> = role === 'device' ? { role, room: `${room}/${source}`, replica: source, source } : { role, rooms: `${room}/*` }
      const response = await fetch(`${serverUrl.replace(/^ws/, 'http')}/dev/token?${new URLSearchParams(query)}`)
      return { source, token: ((await response.json()) as { token: string }).token }
    },
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
