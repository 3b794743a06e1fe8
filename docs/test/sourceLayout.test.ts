/**
 * A package whose README has a "Source layout" section builds its `src/` in the layers it lists:
 * a folder imports only from itself and the folders listed before it, and folders on one line
 * import nothing from each other. The layers are read from the README, so the list users read and
 * the code cannot drift apart.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** What a file of `src/` imports: its path under `src/`, its folder, and the folders it imports or re-exports from. */
interface FileImports {
  readonly file: string
  readonly folder: string
  readonly imports: readonly string[]
}

/** The README's layers, from the ground up, each a list of folder names; null without the section. */
function layersOf(readme: string): string[][] | null {
  const section = readme.split(/^## Source layout$/m)[1]?.split(/^## /m)[0]
  if (section === undefined) return null
  return [...section.matchAll(/^\d+\.\s+([^:]+):/gm)].map((item) => [...(item[1] as string).matchAll(/`([a-z]+)\/`/g)].map((m) => m[1] as string))
}

/** Every `.ts` file in a folder of `src`, with the folders of `src` it imports from. */
function folderImports(src: string): FileImports[] {
  const out: FileImports[] = []
  const walk = (dir: string, folder: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path, folder)
      else if (entry.name.endsWith('.ts')) out.push({ file: relative(src, path), folder, imports: importedFolders(src, path) })
    }
  }
  for (const entry of readdirSync(src, { withFileTypes: true })) if (entry.isDirectory()) walk(join(src, entry.name), entry.name)
  return out
}

/** The top folders of `src` a file's relative specifiers land in (comments left out). */
function importedFolders(src: string, path: string): string[] {
  const code = readFileSync(path, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/(^|[^:\\])\/\/.*$/gm, '$1')
  const folders = new Set<string>()
  for (const m of code.matchAll(/\b(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const target = relative(src, join(path, '..', m[1] as string))
    if (target.includes('/') && !target.startsWith('..')) folders.add(target.split('/')[0] as string)
  }
  return [...folders]
}

/** The imports that break the layering: into a later layer, sideways within one, or into a folder not listed. */
function layeringBreaks(layers: readonly (readonly string[])[], files: readonly FileImports[]): string[] {
  const rank = new Map(layers.flatMap((folders, i) => folders.map((f) => [f, i + 1] as const)))
  const breaks: string[] = []
  for (const { file, folder, imports } of files) {
    const own = rank.get(folder) ?? 0
    for (const target of imports) {
      if (target === folder) continue
      const theirs = rank.get(target)
      if (theirs === undefined || theirs >= own) breaks.push(`${file} imports ${target}/ (layer ${theirs ?? 'none'}, its own ${own})`)
    }
  }
  return breaks
}

const packages = readdirSync(join(ROOT, 'packages'))
  .map((name) => ({ name, readme: join(ROOT, 'packages', name, 'README.md') }))
  .filter(({ readme }) => existsSync(readme))
  .flatMap(({ name, readme }) => {
    const layers = layersOf(readFileSync(readme, 'utf8'))
    return layers === null ? [] : [{ name, layers, src: join(ROOT, 'packages', name, 'src') }]
  })

describe('source layouts (package READMEs, Source layout)', () => {
  it('the engine and the log package list theirs', () => {
    expect(packages.map((p) => p.name)).toEqual(expect.arrayContaining(['engine', 'idb']))
  })

  for (const { name, layers, src } of packages) {
    it(`${name}: lists every folder of src/ once, and no folder that is not there`, () => {
      const listed = layers.flat()
      const present = readdirSync(src, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name)
      expect(new Set(listed).size).toBe(listed.length)
      expect([...listed].sort()).toEqual([...present].sort())
    })

    it(`${name}: no folder imports a folder of its own layer or one above it`, () => {
      const files = folderImports(src)
      expect(files.length).toBeGreaterThan(20)
      expect(layeringBreaks(layers, files)).toEqual([])
    })
  }

  it('finds an import that runs up, one that runs sideways, and one into a folder not listed', () => {
    const layers = [['options', 'errors'], ['time', 'aggregates'], ['windows'], ['core']]
    const planted: FileImports[] = [
      { file: 'windows/placement.ts', folder: 'windows', imports: ['windows', 'time', 'core'] },
      { file: 'time/frontiers.ts', folder: 'time', imports: ['errors', 'aggregates'] },
      { file: 'core/engine.ts', folder: 'core', imports: ['scratch'] },
    ]
    expect(layeringBreaks(layers, planted)).toEqual([
      'windows/placement.ts imports core/ (layer 4, its own 3)',
      'time/frontiers.ts imports aggregates/ (layer 2, its own 2)',
      'core/engine.ts imports scratch/ (layer none, its own 4)',
    ])
  })
})
