import { defaultClientConditions, defaultServerConditions } from 'vite'
import { defineConfig } from 'vitest/config'

// Workspace packages resolve each other's src/ through this export condition,
// so tests need no build step.
const source = '@tidemark/source'

export default defineConfig({
  resolve: { conditions: [source, ...defaultClientConditions] },
  ssr: { resolve: { conditions: [source, ...defaultServerConditions] } },
  test: {
    projects: [
      {
        extends: true,
        test: { name: 'engine', include: ['packages/engine/test/**/*.test.ts'], environment: 'node' },
      },
      {
        extends: true,
        test: { name: 'demo', include: ['apps/demo/test/**/*.test.ts'], environment: 'node' },
      },
      {
        extends: true,
        test: { name: 'seeded-random', include: ['packages/seeded-random/test/**/*.test.ts'], environment: 'node' },
      },
      {
        extends: true,
        test: {
          name: 'react',
          include: ['packages/react-bindings/test/**/*.test.{ts,tsx}'],
          environment: 'happy-dom',
        },
      },
    ],
  },
})
