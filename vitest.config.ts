import { fileURLToPath } from 'node:url'
import { defaultClientConditions, defaultServerConditions } from 'vite'
import { configDefaults, defineConfig } from 'vitest/config'

// Workspace packages resolve each other's src/ through this export condition,
// so tests need no build step.
const source = '@tidemark/source'

/** One Vitest project per package: its own tests, in Node unless it renders. */
const project = (name: string, include: string[], environment: 'node' | 'happy-dom' = 'node', exclude: string[] = []) => ({
  extends: true as const,
  test: { name, include, exclude: [...configDefaults.exclude, ...exclude], environment },
})

/**
 * @tidemark/react's source and its test/react18 tests on React 18.3.1 (its peer range starts
 * there; the workspace has 19). test/react18 is a private package of its own whose `react` and
 * `react-dom` are 18.3.1, so react-dom 18's own `require('react')` finds React 18 there; the
 * package's source, outside it, is given that React 18 by an alias.
 */
const react18Root = 'packages/react/test/react18'
const react18Tests = `${react18Root}/**/*.test.{ts,tsx}`
const react18 = {
  extends: true as const,
  resolve: {
    alias: [{ find: /^react(\/.*)?$/, replacement: `${fileURLToPath(new URL(`${react18Root}/node_modules/react`, import.meta.url))}$1` }],
  },
  test: {
    name: 'react18',
    include: [react18Tests],
    environment: 'happy-dom' as const,
  },
}

export default defineConfig({
  resolve: { conditions: [source, ...defaultClientConditions] },
  ssr: { resolve: { conditions: [source, ...defaultServerConditions] } },
  test: {
    // A focused test (`.only`) fails the run everywhere, not only when CI is set; projects inherit this (extends: true).
    allowOnly: false,
    // `TIDEMARK_EXTENSIVE=1` runs every property 20 times longer: so may every test.
    testTimeout: process.env.TIDEMARK_EXTENSIVE === '1' ? 900_000 : 5_000,
    projects: [
      project('engine', ['packages/engine/test/**/*.test.ts']),
      project('yjs', ['packages/yjs/test/**/*.test.ts']),
      project('idb', ['packages/idb/test/**/*.test.ts']),
      project('react', ['packages/react/test/**/*.test.{ts,tsx}'], 'happy-dom', [react18Tests]),
      react18,
      project('testkit', ['packages/testkit/test/**/*.test.ts']),
      project('seeded-random', ['packages/seeded-random/test/**/*.test.ts']),
      project('storm', ['packages/storm/test/**/*.test.ts']),
      project('worker', ['packages/worker/test/**/*.test.ts']),
      project('demo', ['apps/demo/test/**/*.test.ts']),
      project('docs', ['docs/test/**/*.test.ts']),
      project('packaging', ['scripts/packaging/test/**/*.test.ts']),
      // The benchmark harness's rules (fake clocks: no test times anything), not its figures.
      project('bench', ['bench/test/**/*.test.ts']),
      // Real relay processes, PGlite, Redis and PostgreSQL: one PGlite data directory is
      // initialized per run (globalSetup) and copied for each relay.
      {
        extends: true as const,
        test: {
          name: 'relay',
          include: ['packages/relay/test/**/*.test.ts'],
          environment: 'node' as const,
          globalSetup: ['packages/relay/test/support/pgliteTemplate.globalSetup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
})
