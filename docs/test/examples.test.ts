/**
 * The guides quote docs/examples/ (compiled by `pnpm typecheck`) and nothing else: every quoted
 * block equals its region, every region is quoted, and no TypeScript block in a guide goes
 * unchecked. Package READMEs that quote an example are held to the same quotes.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { DOCS, guides, quotedExamples, readmes } from './quotedExamples.ts'

const FIX = 'run `pnpm --filter @tidemark/docs examples` to copy the examples into the guides'

describe('docs examples', () => {
  const quotes = [...guides(), ...readmes()].flatMap(quotedExamples)

  it('finds quoted examples', () => {
    expect(quotes.length).toBeGreaterThan(0)
  })

  it.each(quotes.map((quote) => [`${quote.guide} quotes ${quote.source}`, quote] as const))('%s as it is', (_, quote) => {
    expect(quote.expected, `${quote.source} does not exist`).not.toBeNull()
    expect(quote.quoted, FIX).toBe(quote.expected)
  })

  it('quotes every region of every example', () => {
    const quoted = new Set(quotes.map((quote) => quote.source))
    for (const file of readdirSync(join(DOCS, 'examples'))) {
      const text = readFileSync(join(DOCS, 'examples', file), 'utf8')
      for (const [, name] of text.matchAll(/\/\/ #region ([\w-]+)/g)) {
        expect(quoted.has(`examples/${file}#${name}`), `examples/${file}#${name} is quoted by no guide`).toBe(true)
      }
    }
  })

  it('leaves no TypeScript block of a guide unchecked', () => {
    for (const guide of guides()) {
      const text = readFileSync(join(DOCS, guide), 'utf8')
      const blocks = [...text.matchAll(/(<!-- example: [^\n]+ -->\n)?```tsx?\n/g)]
      const unchecked = blocks.filter((block) => block[1] === undefined).length
      expect(unchecked, `${guide} has TypeScript blocks that quote no example`).toBe(0)
    }
  })
})
