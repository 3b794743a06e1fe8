/**
 * Once per run: a temporary directory for the test relays' data, holding one initialized PGlite
 * data directory that every relay starts from a copy of (support/relayProcess.ts). The returned
 * teardown removes the directory and everything the relays wrote in it.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openPglite } from '@tidemark/relay'

export default async function globalSetup(): Promise<() => void> {
  const tmp = mkdtempSync(join(tmpdir(), 'tidemark-e2e-'))
  const template = join(tmp, 'relay-template')
  const started = Date.now()
  const sql = await openPglite(template)
  await sql.close()
  console.log(`[e2e] relay store template initialized in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  process.env.TIDEMARK_E2E_TMP = tmp
  process.env.TIDEMARK_E2E_RELAY_TEMPLATE = template
  return () => rmSync(tmp, { recursive: true, force: true })
}
