/**
 * Code blocks in the guides are quotes of typechecked files: docs/examples/ (compiled by
 * `pnpm typecheck`), or a package's test samples that also run (the recipes quote
 * packages/idb/test/recipes/). A quote is a fenced block right after a marker naming the file,
 * relative to docs/, and a region:
 *
 *   <!-- example: examples/device.ts#open -->
 *
 * A region is the lines between `// #region open` and `// #endregion open` (or a bare
 * `// #endregion`) in that file, without
 * other region markers, dedented. The docs test fails when a block differs from its region;
 * `pnpm --filter @tidemark/docs examples` rewrites the blocks from the files.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'

/** The docs/ folder. */
export const DOCS = new URL('..', import.meta.url).pathname

const MARKER = /<!-- example: ([\w./-]+)#([\w-]+) -->\n```(\w+)\n([\s\S]*?)```/g

/** One quoted block of a guide, and what it should say. */
export interface QuotedExample {
  /** The guide, relative to docs/. */
  readonly guide: string
  /** `file#region`, as the marker names it. */
  readonly source: string
  /** The block as the guide has it. */
  readonly quoted: string
  /** The region as the file has it, or null when the file or region does not exist. */
  readonly expected: string | null
}

/** Markdown files under docs/, relative to it (the generated API reference excluded). */
export function guides(): string[] {
  const found: string[] = []
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name === 'api') continue
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.md')) found.push(relative(DOCS, path))
    }
  }
  walk(DOCS)
  return found.sort()
}

/**
 * Package READMEs that quote docs/examples/ (with the same markers, paths relative to docs/),
 * relative to docs/. Their quotes are checked like the guides'; their other blocks are not.
 */
export function readmes(): string[] {
  const packages = join(DOCS, '..', 'packages')
  return readdirSync(packages, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => join(packages, entry.name, 'README.md'))
    .filter((path) => {
      try {
        return readFileSync(path, 'utf8').includes('<!-- example: ')
      } catch {
        return false
      }
    })
    .map((path) => relative(DOCS, path))
    .sort()
}

/** The lines of `region` in `file` (relative to docs/), dedented; null when absent. */
export function region(file: string, name: string): string | null {
  let text: string
  try {
    text = readFileSync(join(DOCS, file), 'utf8')
  } catch {
    return null
  }
  const lines = text.split('\n')
  const start = lines.findIndex((line) => line.trim() === `// #region ${name}`)
  // `// #endregion` may name its region or not (a file whose regions do not nest).
  const end = lines.findIndex((line, i) => i > start && (line.trim() === `// #endregion ${name}` || line.trim() === '// #endregion'))
  if (start < 0 || end < 0) return null
  const body = lines.slice(start + 1, end).filter((line) => !/^\s*\/\/ #(end)?region /.test(line))
  const indent = Math.min(...body.filter((line) => line.trim() !== '').map((line) => line.length - line.trimStart().length))
  return `${body.map((line) => line.slice(indent)).join('\n')}\n`
}

/** Every quoted block of one guide. */
export function quotedExamples(guide: string): QuotedExample[] {
  const text = readFileSync(join(DOCS, guide), 'utf8')
  return [...text.matchAll(MARKER)].map((match) => ({
    guide,
    source: `${match[1]}#${match[2]}`,
    quoted: match[4] as string,
    expected: region(match[1] as string, match[2] as string),
  }))
}

/** The guide's text with every quoted block replaced by its region. */
export function withExamples(guide: string): string {
  const text = readFileSync(join(DOCS, guide), 'utf8')
  return text.replace(MARKER, (block, file: string, name: string, lang: string) => {
    const expected = region(file, name)
    return expected === null ? block : `<!-- example: ${file}#${name} -->\n\`\`\`${lang}\n${expected}\`\`\``
  })
}
