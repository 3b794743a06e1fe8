/**
 * The public packages that run on Node only (a server and its command). Nothing of theirs goes
 * into a browser app's bundle, so they have no size budget and no place in the browser consumer
 * app; they are built, packed, checked (contents, declared imports, publint, attw) like the
 * others, and each command (`bin`) is run from the packed tarball instead (binSmoke.ts).
 */
import { join } from 'node:path'

/** How a Node-only package's command is smoke-tested from its tarball. */
export interface BinSmoke {
  /** The command, a key of the package's `bin`. */
  readonly bin: string
  /** Its environment (besides PATH, HOME, TMPDIR, LANG); `workDir` is a fresh temporary directory of the run. */
  readonly env: (workDir: string) => Readonly<Record<string, string>>
  /** The line it prints once it serves; its first group is JSON holding the `port` it listens on (127.0.0.1). */
  readonly ready: RegExp
  /** A path it answers with 200 once ready. */
  readonly probe: string
  /** The exit code it ends with on SIGTERM. */
  readonly exitOnSigterm: number
}

/**
 * The Node-only packages, by name, with their command's smoke test.
 *
 * @example
 * NODE_PACKAGES['@tidemark/relay']?.bin // 'tidemark-relay'
 */
export const NODE_PACKAGES: Readonly<Record<string, BinSmoke>> = {
  '@tidemark/relay': {
    bin: 'tidemark-relay',
    // A free port on loopback, its store in the run's directory, development tokens (which need loopback and sign with a random secret).
    env: (workDir) => ({ HOST: '127.0.0.1', PORT: '0', TIDEMARK_DATA_DIR: join(workDir, 'relay-data'), TIDEMARK_DEV_TOKENS: '1' }),
    ready: /^tidemark-relay ready (\{.*\})$/m,
    probe: '/healthz',
    exitOnSigterm: 0,
  },
}

/**
 * True for a package that runs on Node only.
 *
 * @example
 * publicPackages().filter((pkg) => !isNodePackage(pkg)) // the browser packages
 */
export function isNodePackage(pkg: { readonly name: string }): boolean {
  return Object.hasOwn(NODE_PACKAGES, pkg.name)
}
