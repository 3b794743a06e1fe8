/**
 * Makes and serves the consumer app once for the run (consumerApp.ts) and hands its folder
 * and URL to the tests through the environment; the returned teardown stops the server by
 * pid and removes the temporary folder.
 */
import { prepareConsumerApp } from './consumerApp.ts'

export default async function globalSetup(): Promise<() => Promise<void>> {
  const app = await prepareConsumerApp(process.env.TIDEMARK_TARBALLS || undefined)
  process.env.CONSUMER_APP_DIR = app.dir
  process.env.CONSUMER_APP_URL = app.url
  const total = app.timings.reduce((sum, t) => sum + t.seconds, 0)
  console.log(`[consumer] app ready in ${total.toFixed(1)} s`)
  return () => app.stop()
}
