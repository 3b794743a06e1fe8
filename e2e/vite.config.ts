import { fileURLToPath } from 'node:url'
import { defaultClientConditions, defineConfig } from 'vite'

/** Port of the e2e page server (127.0.0.1 only; `E2E_PORT` overrides, e.g. when another run holds 4183); Playwright starts and stops it. */
export const E2E_PORT = Number(process.env.E2E_PORT ?? 4183)
/** Port of the fleet demo (`scripts/demo.mjs` with DEMO_PORT) for tests/demo-smoke.spec.ts; `DEMO_E2E_PORT` overrides. */
export const DEMO_E2E_PORT = Number(process.env.DEMO_E2E_PORT ?? 4184)

// Workspace packages resolve to their src/ through this condition: the page needs no package build.
export default defineConfig({
  root: fileURLToPath(new URL('./pages', import.meta.url)),
  logLevel: 'warn',
  resolve: { conditions: ['@tidemark/source', ...defaultClientConditions] },
  build: {
    outDir: fileURLToPath(new URL('./dist', import.meta.url)),
    emptyOutDir: true,
    // Fixed names, so the service worker can precache the app shell for the offline reload.
    // storm.html: the reconnect-storm pages (tests/storm.spec.ts); storm-example.html: @tidemark/storm's README example.
    rolldownOptions: {
      input: {
        index: fileURLToPath(new URL('./pages/index.html', import.meta.url)),
        storm: fileURLToPath(new URL('./pages/storm.html', import.meta.url)),
        stormExample: fileURLToPath(new URL('./pages/storm-example.html', import.meta.url)),
        // worker.html: one engine per origin in a worker (@tidemark/worker; tests/worker*.spec.ts).
        worker: fileURLToPath(new URL('./pages/worker.html', import.meta.url)),
      },
      output: { entryFileNames: (chunk) => (chunk.name === 'index' ? 'app.js' : `${chunk.name}.js`), chunkFileNames: '[name].js', assetFileNames: '[name][extname]' },
    },
  },
  // Module workers (the worker page's host), as @tidemark/worker's README recommends.
  worker: { format: 'es' },
  preview: { host: '127.0.0.1', port: E2E_PORT, strictPort: true },
  server: { host: '127.0.0.1', port: E2E_PORT, strictPort: true },
})
