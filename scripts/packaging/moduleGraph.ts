/**
 * The module graph of built JavaScript, walked by a bundler (rolldown) rather than by
 * pattern matching: every static import, re-export and literal dynamic `import()` is seen.
 * Relative imports are followed; every other specifier (a package, `node:` builtins) is
 * recorded with the modules that import it and not followed.
 */
import { rolldown } from 'rolldown'

/** What a walk found. */
export interface ModuleGraph {
  /** Absolute paths of the modules walked, entries included. */
  readonly modules: readonly string[]
  /** Each bare specifier imported, with the modules importing it. */
  readonly bareImports: ReadonlyMap<string, readonly string[]>
}

/**
 * Walks the modules reachable from `entries` (absolute paths of .js files).
 *
 * @example
 * const graph = await moduleGraph(['/repo/packages/engine/dist/index.js'])
 * console.log(graph.modules.length, [...graph.bareImports.keys()])
 */
export async function moduleGraph(entries: readonly string[]): Promise<ModuleGraph> {
  const modules = new Set<string>()
  const bareImports = new Map<string, string[]>()
  const bundle = await rolldown({
    input: [...entries],
    logLevel: 'silent',
    plugins: [
      {
        name: 'tidemark-module-graph',
        resolveId(specifier, importer) {
          if (specifier.startsWith('.') || specifier.startsWith('/') || importer === undefined) return null
          const importers = bareImports.get(specifier) ?? []
          importers.push(importer)
          bareImports.set(specifier, importers)
          return { id: specifier, external: true }
        },
        load(id) {
          modules.add(id)
          return null
        },
      },
    ],
  })
  // rolldown parses and links lazily: the graph is only walked when output is asked for.
  await bundle.generate({ format: 'esm' })
  await bundle.close()
  return { modules: [...modules].sort(), bareImports }
}

/**
 * The package a bare specifier belongs to: `@scope/name` or `name`, without a subpath;
 * `node:` builtins keep their prefix.
 *
 * @example
 * packageOf('lib0/encoding') // 'lib0'
 * packageOf('@tidemark/engine/adapter') // '@tidemark/engine'
 */
export function packageOf(specifier: string): string {
  if (specifier.startsWith('node:')) return specifier
  const parts = specifier.split('/')
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string)
}
