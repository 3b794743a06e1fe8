/** Rewrites every quoted block of the guides (and of the READMEs that quote one) from docs/examples/ (see test/quotedExamples.ts). */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DOCS, guides, readmes, withExamples } from '../test/quotedExamples.ts'

for (const guide of [...guides(), ...readmes()]) {
  const path = join(DOCS, guide)
  const next = withExamples(guide)
  if (next !== readFileSync(path, 'utf8')) {
    writeFileSync(path, next)
    console.log(`updated ${guide}`)
  }
}
