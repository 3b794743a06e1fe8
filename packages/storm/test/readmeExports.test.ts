/**
 * The README's Driver API, Pieces and Page side name functions and types a user imports: each
 * is exported by the entry the README gives it.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import * as driver from '../src/index.ts'
import * as page from '../src/page.ts'

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

/** The text of the README between two headings. */
function section(from: string, to: string): string {
  const start = README.indexOf(from)
  const end = README.indexOf(to, start)
  expect(start, `README has no ${from}`).toBeGreaterThanOrEqual(0)
  expect(end, `README has no ${to} after ${from}`).toBeGreaterThan(start)
  return README.slice(start, end)
}

/** The names that open a code span of `text`: `name`, `name(…)` or `new Name(…)`. */
function spanNames(text: string): string[] {
  return [...new Set([...text.matchAll(/`(?:new )?([A-Za-z]\w*)[`(]/g)].map(([, name]) => name as string))]
}

describe('@tidemark/storm README', () => {
  it('runStorm and every piece the README lists are exported by @tidemark/storm', () => {
    // The ledger's methods are StormLedger's, not exports.
    const named = ['runStorm', ...spanNames(section('### Pieces', '## Page side')).filter((name) => !['listen', 'durable', 'totals', 'record', 'runStorm'].includes(name))]
    expect(named.length).toBeGreaterThan(30)
    const exported = new Map(Object.entries(driver))
    const missing = named.filter((name) => typeof exported.get(name) !== 'function')
    expect(missing).toEqual([])
    expect(driver.STORM_REPORT_BINDING).toBe('tidemarkStormReport')
  })

  it('beginStormPage, and the contract both entries share, come from @tidemark/storm/page too', () => {
    expect(typeof page.beginStormPage).toBe('function')
    expect(page.stormPageUrl).toBe(driver.stormPageUrl)
    expect(page.parseStormQuery).toBe(driver.parseStormQuery)
    expect(page.stormReading).toBe(driver.stormReading)
    expect(page.stragglingReadings).toBe(driver.stragglingReadings)
    expect(page.windowDigest).toBe(driver.windowDigest)
    expect(page.STORM_REPORT_BINDING).toBe(driver.STORM_REPORT_BINDING)
  })
})
