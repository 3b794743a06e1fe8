/**
 * Where a V8 profile's function is in the repository, for the profilers' summaries: its file
 * relative to the repository, and the line of its declaration.
 */
import { readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { REPO_DIR } from './child.ts'

/** A profile node's script URL as a repository path (`(native)` for V8's own frames). */
export function fileOf(url: string): string {
  if (url === '') return '(native)'
  if (!url.startsWith('file://')) return url
  const path = relative(REPO_DIR, fileURLToPath(url))
  return path.includes('node_modules/') ? `node_modules/…/${path.split('node_modules/').pop() ?? path}` : path
}

/**
 * `:line` of the declaration of function `name` in `file`, or ''. Profile line numbers point into
 * tsx's transpiled output, so the declaration is looked up by name in the source.
 */
export function declarationLine(name: string, file: string): string {
  if (!file.endsWith('.ts') || name.startsWith('(')) return ''
  const short = name.split('.').pop() ?? name
  let source: string
  try {
    source = readFileSync(join(REPO_DIR, file), 'utf8')
  } catch {
    return ''
  }
  const escaped = short.replace(/[.*+?^${}()|[\]\\#]/g, '\\$&')
  const pattern = new RegExp(`^\\s*(export\\s+)?(async\\s+)?(function\\s*\\*?\\s*|get\\s+|set\\s+|\\*\\s*)?${escaped}\\s*[(<]|^\\s*${escaped}\\s*[:=]\\s*\\(`)
  const lines = source.split('\n')
  for (let i = 0; i < lines.length; i++) if (pattern.test(lines[i] as string)) return `:${i + 1}`
  return ''
}
