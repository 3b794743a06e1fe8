/**
 * The root README, the docs index and the bench README link only to files that exist, and their
 * `#anchors` to headings of the page they name.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = new URL('../..', import.meta.url).pathname
const DOCUMENTS = ['README.md', 'docs/README.md', 'bench/README.md']

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replaceAll(' ', '-')
}

function anchorsOf(file: string): Set<string> {
  return new Set([...readFileSync(file, 'utf8').matchAll(/^#{1,6} (.+)$/gm)].map(([, heading]) => anchor(heading as string)))
}

describe('links in the READMEs', () => {
  for (const document of DOCUMENTS) {
    it(`${document}: every relative link names a file that exists, and every anchor a heading`, () => {
      const links = [...readFileSync(join(ROOT, document), 'utf8').matchAll(/\]\(([^)\s]+)\)/g)].map(([, target]) => target as string)
      expect(links.length).toBeGreaterThan(0)
      for (const link of links) {
        if (/^[a-z]+:/.test(link)) continue
        const [path, hash] = link.split('#') as [string, string | undefined]
        const file = path === '' ? join(ROOT, document) : join(ROOT, dirname(document), path)
        expect(existsSync(file), `${document}: ${link}`).toBe(true)
        if (hash !== undefined) expect(anchorsOf(file).has(hash), `${document}: ${link}`).toBe(true)
      }
    })
  }
})
