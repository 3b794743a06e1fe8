import { execSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { defineConfig } from '@playwright/test'
import { DEMO_E2E_PORT, E2E_PORT } from './vite.config.ts'

/** Debian's Chromium (never a downloaded browser); `CHROMIUM=/path/to/chrome` overrides. */
function chromiumPath(): string {
  const fromEnv = process.env.CHROMIUM
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv
  try {
    return execSync('command -v chromium', { encoding: 'utf8', shell: '/bin/sh' }).trim()
  } catch {
    throw new Error('e2e: chromium not found. Install Debian chromium (apt-get install chromium, or bash scripts/setup.sh) or set CHROMIUM=/path/to/chrome')
  }
}

// Without this, Chromium service workers bypass Playwright's network emulation: setOffline(true)
// would leave the worker's fetches online and the "offline" reload would not be one.
process.env.PW_EXPERIMENTAL_SERVICE_WORKER_NETWORK_EVENTS = '1'

const repoRoot = fileURLToPath(new URL('..', import.meta.url))
const baseURL = `http://127.0.0.1:${E2E_PORT}`
const DEMO_URL = `http://127.0.0.1:${DEMO_E2E_PORT}`
const PAGES_OUT_DIR = `${repoRoot}node_modules/.e2e-pages-${E2E_PORT}`

export default defineConfig({
  testDir: './tests',
  outputDir: './test-results',
  // A temporary directory for the test relays' stores, with one initialized PGlite directory they start from.
  globalSetup: './globalSetup.ts',
  // Generous: CI shares two cores; a test that needs this long is reported, never hidden.
  timeout: 120_000,
  // One retry in CI only, and Playwright reports every retried test as flaky in its summary.
  retries: process.env.CI ? 1 : 0,
  expect: { timeout: 15_000 },
  // Two cores: one browser at a time keeps timings honest.
  workers: 1,
  fullyParallel: false,
  // A focused test (`.only`) fails every run, local or CI: it would silently skip the rest.
  forbidOnly: true,
  reporter: [['list']],
  use: {
    baseURL,
    browserName: 'chromium',
    headless: true,
    launchOptions: {
      executablePath: chromiumPath(),
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    },
    trace: 'retain-on-failure',
  },
  webServer: [
    {
      // A production build served by `vite preview`: few files, so the service worker can cache the shell.
      // Built into a directory of its own port, so a concurrent run on another port never empties what this one serves.
      command: `pnpm exec vite build -c e2e/vite.config.ts --outDir ${PAGES_OUT_DIR} && pnpm exec vite preview -c e2e/vite.config.ts --outDir ${PAGES_OUT_DIR} --host 127.0.0.1 --port ${E2E_PORT} --strictPort`,
      cwd: repoRoot,
      url: `${baseURL}/`,
      reuseExistingServer: false,
      timeout: 120_000,
      stdout: 'pipe',
      stderr: 'pipe',
    },
    {
      // The fleet demo exactly as `pnpm start` runs it (build, relay, preview), on its own port.
      // SIGTERM lets scripts/demo.mjs stop its own children by PID; they stay in its process group,
      // so a SIGKILL of the group (Playwright on abort) takes them too.
      command: 'node scripts/demo.mjs',
      cwd: repoRoot,
      // Its own build directory and relay store, so a concurrent `pnpm start` (or another run) never rebuilds what it
      // serves nor holds its store (one relay at a time opens a store; this one is kept between runs, so only the
      // first run initializes it).
      env: {
        DEMO_PORT: String(DEMO_E2E_PORT),
        DEMO_OUT_DIR: `node_modules/.demo-e2e-${DEMO_E2E_PORT}`,
        DEMO_RELAY_DIR: `node_modules/.demo-e2e-${DEMO_E2E_PORT}-relay`,
      },
      url: `${DEMO_URL}/config.json`,
      reuseExistingServer: false,
      timeout: 120_000,
      gracefulShutdown: { signal: 'SIGTERM', timeout: 20_000 },
      stdout: 'pipe',
      stderr: 'pipe',
    },
  ],
})
