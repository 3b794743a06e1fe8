/**
 * Initializes one PGlite data directory per test run (initdb takes several seconds); every relay
 * in the tests starts on a copy of it (`freshDataDir`).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import type { TestProject } from 'vitest/node'

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate: string
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-relay-template-'))
  const db = await PGlite.create(dir)
  await db.close()
  project.provide('pgliteTemplate', dir)
  return () => rmSync(dir, { recursive: true, force: true })
}
