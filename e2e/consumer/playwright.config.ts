import { execSync } from 'node:child_process'
import { defineConfig } from '@playwright/test'

/** Debian's Chromium (never a downloaded browser), as in e2e/playwright.config.ts; `CHROMIUM=/path/to/chrome` overrides. */
function chromiumPath(): string {
  const fromEnv = process.env.CHROMIUM
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv
  try {
    return execSync('command -v chromium', { encoding: 'utf8', shell: '/bin/sh' }).trim()
  } catch {
    throw new Error('consumer test: chromium not found. Install Debian chromium (apt-get install chromium, or bash scripts/setup.sh) or set CHROMIUM=/path/to/chrome')
  }
}

/**
 * The consumer test: `pnpm test:consumer` (or step 7 of `pnpm test:packages`, which passes its
 * tarballs in TIDEMARK_TARBALLS). globalSetup makes the app from the packed packages.
 */
export default defineConfig({
  testDir: '.',
  testMatch: 'consumer.spec.ts',
  outputDir: './test-results',
  globalSetup: './globalSetup.ts',
  // The first test waits for nothing the setup has not done; two cores shared with other jobs.
  timeout: 60_000,
  retries: 0,
  expect: { timeout: 15_000 },
  workers: 1,
  fullyParallel: false,
  // A focused test (`.only`) fails every run, local or CI: it would silently skip the rest.
  forbidOnly: true,
  reporter: [['list']],
  use: {
    browserName: 'chromium',
    headless: true,
    launchOptions: {
      executablePath: chromiumPath(),
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    },
    trace: 'retain-on-failure',
  },
})
