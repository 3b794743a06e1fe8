/**
 * Temporary directories for the tests' relays, each a copy of the run's initialized PGlite data
 * directory, removed by `removeDataDirs`.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inject } from 'vitest'

const made: string[] = []

/** A new PGlite data directory (a copy of the initialized template). */
export function freshDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-relay-data-'))
  cpSync(inject('pgliteTemplate'), dir, { recursive: true })
  made.push(dir)
  return dir
}

/** A new empty temporary directory. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `tidemark-relay-${prefix}-`))
  made.push(dir)
  return dir
}

/** Removes every directory made so far. */
export function removeDataDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
}
