import { realpathSync } from 'node:fs'
import Module, { createRequire } from 'node:module'
import { dirname, sep } from 'node:path'

/**
 * Setup of the `react18` Vitest project. Vitest's aliases reach the code it transforms (the
 * package's source and these tests), not the CommonJS inside node_modules, and pnpm links
 * react-dom-18's `react` peer to the workspace's React 19 (a peer is found by its name, and
 * `react` here is 19): so react-dom 18's own `require('react')` is sent to React 18 here.
 */
const packageRequire = createRequire(import.meta.url)
const reactDom18 = dirname(realpathSync(packageRequire.resolve('react-dom-18/package.json'))) + sep

type ResolveFilename = (request: string, parent: { filename?: string | null } | null | undefined, ...rest: unknown[]) => string
const loader = Module as unknown as { _resolveFilename: ResolveFilename }
const resolveFilename = loader._resolveFilename
loader._resolveFilename = function (request, parent, ...rest) {
  if (/^react(\/|$)/.test(request) && parent?.filename?.startsWith(reactDom18)) {
    return packageRequire.resolve(request.replace(/^react/, 'react-18'))
  }
  return resolveFilename.call(this, request, parent, ...rest)
}

// React 18's `act` flushes, and does not warn, only where the environment says it is a test.
;(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true
