// @ts-check
/**
 * TypeDoc over the public packages. Adding a package to the reference is one line in
 * `PACKAGES`: its entry points are the `@tidemark/source` targets of its package.json exports.
 */
import { readFileSync } from 'node:fs'

/** The folders under packages/ whose exports make up the API reference. */
const PACKAGES = ['engine', 'yjs', 'idb', 'react', 'storm', 'relay', 'worker']

/** @param {string} folder */
function manifest(folder) {
  return JSON.parse(readFileSync(new URL(`../packages/${folder}/package.json`, import.meta.url), 'utf8'))
}

/** @param {string} folder */
function entryPoints(folder) {
  /** @type {Record<string, Record<string, string> | string>} */
  const exports = manifest(folder).exports
  // Entries only: `./package.json` maps to a plain path, not to source and dist targets.
  return Object.values(exports).flatMap((targets) => (typeof targets === 'string' ? [] : [`../packages/${folder}/${targets['@tidemark/source']}`]))
}

/** @type {Partial<import('typedoc').TypeDocOptions>} */
export default {
  name: 'Tidemark API reference',
  entryPoints: PACKAGES.flatMap(entryPoints),
  // Declarations in these packages need a doc comment; the docs package itself declares nothing.
  packagesRequiringDocumentation: PACKAGES.map((folder) => manifest(folder).name),
  tsconfig: './tsconfig.api.json',
  out: './api',
  // Source links need a hosted git remote; a clone of a local path (CI) has none, so none are made.
  disableSources: true,
  readme: './api-index.md',
  plugin: ['./requireExamples.mjs'],
  sort: ['kind', 'alphabetical'],
  validation: { notExported: true, invalidLink: true, rewrittenLink: true, notDocumented: true, unusedMergeModuleWith: true },
  // Exported declarations must have a doc comment; their members are documented where they need it.
  requiredToBeDocumented: ['Enum', 'Variable', 'Function', 'Class', 'Interface', 'TypeAlias'],
  treatWarningsAsErrors: true,
  treatValidationWarningsAsErrors: true,
}
