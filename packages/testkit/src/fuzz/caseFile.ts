/**
 * Failing cases as JSON files, so a shrunk repro can be replayed with `--replay <file>`.
 * Plain JSON loses what hostile inputs are made of (NaN, ±Infinity, -0, undefined, bigint),
 * so those are written as tagged objects: `{"$num":"NaN"}`, `{"$undefined":1}`, `{"$bigint":"12"}`;
 * an aggregate of the plans' menu (functions, which JSON drops) by its name: `{"$aggregate":"p"}`.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AGGREGATE_MENU } from '../model/streamPlan.ts'

export interface CaseFile {
  readonly scenario: string
  readonly seed: number
  readonly iteration: number
  readonly invariant: string
  readonly message: string
  readonly testCase: unknown
}

export function encodeCase(value: unknown): string {
  return JSON.stringify(tag(value), null, 1)
}

export function decodeCase(text: string): unknown {
  return untag(JSON.parse(text))
}

function tag(value: unknown): unknown {
  if (typeof value === 'number') {
    if (Number.isNaN(value) || !Number.isFinite(value) || Object.is(value, -0)) return { $num: Object.is(value, -0) ? '-0' : String(value) }
    return value
  }
  if (value === undefined) return { $undefined: 1 }
  if (typeof value === 'bigint') return { $bigint: value.toString() }
  if (Array.isArray(value)) return Array.from(value, tag)
  const aggregate = Object.keys(AGGREGATE_MENU).find((name) => AGGREGATE_MENU[name] === value)
  if (aggregate !== undefined) return { $aggregate: aggregate }
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {}
    for (const [key, v] of Object.entries(value)) own(out, key, tag(v))
    return out
  }
  return value
}

function untag(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(untag)
  if (typeof value !== 'object' || value === null) return value
  const record = value as Record<string, unknown>
  const keys = Object.keys(record)
  if (keys.length === 1) {
    if (typeof record.$num === 'string') return record.$num === '-0' ? -0 : Number(record.$num)
    if (record.$undefined === 1) return undefined
    if (typeof record.$bigint === 'string') return BigInt(record.$bigint)
    if (typeof record.$aggregate === 'string' && Object.hasOwn(AGGREGATE_MENU, record.$aggregate)) return AGGREGATE_MENU[record.$aggregate]
  }
  // Own `__proto__` keys from hostile inputs must stay own data properties, not prototypes.
  const out: Record<string, unknown> = {}
  for (const key of keys) own(out, key, untag(record[key]))
  return out
}

function own(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

/** Where failing cases are written: outside the repository, so a failure never dirties the tree. */
export function failureDir(): string {
  return process.env.TIDEMARK_FUZZ_DIR ?? join(tmpdir(), 'tidemark-fuzz')
}

export function writeCaseFile(file: CaseFile): string {
  const dir = failureDir()
  mkdirSync(dir, { recursive: true })
  const path = join(dir, `${file.scenario}-seed${file.seed}-it${file.iteration}.json`)
  writeFileSync(path, encodeCase(file))
  return path
}

export function readCaseFile(path: string): CaseFile {
  const file = decodeCase(readFileSync(path, 'utf8')) as CaseFile
  if (typeof file.scenario !== 'string') throw new Error(`${path} is not a fuzz case file`)
  return file
}
