/**
 * `@tidemark/storm`'s README example runs in CI: its page (pages/storm-example.html,
 * pages/stormExample.ts) and its test (tests/storm-example.spec.ts) are files of this suite,
 * and this test fails as soon as the README's marked code blocks and those files differ, or a
 * marker goes missing.
 */
import { readFileSync } from 'node:fs'
import { expect, test } from '@playwright/test'

const root = new URL('../../', import.meta.url)
const README = 'packages/storm/README.md'
const EXAMPLE_FILES = ['e2e/pages/storm-example.html', 'e2e/pages/stormExample.ts', 'e2e/tests/storm-example.spec.ts']

test('the @tidemark/storm README shows exactly the example files this suite runs', () => {
  const readme = readFileSync(new URL(README, root), 'utf8')
  // A marker names the file; the fenced block right after it must be that file, byte for byte.
  const blocks = [...readme.matchAll(/<!-- example: (\S+) -->\n```[a-z]*\n([\s\S]*?)```\n/g)].map((match) => ({ path: match[1] as string, code: match[2] as string }))
  expect(blocks.map((block) => block.path)).toEqual(EXAMPLE_FILES)
  for (const block of blocks) expect(block.code, `${README}: the block marked ${block.path}`).toBe(readFileSync(new URL(block.path, root), 'utf8'))
})
