/**
 * The browser of the browser benches: Debian's Chromium (never a downloaded one), launched
 * headless through playwright-core. `CHROMIUM=/path/to/chrome` overrides the executable.
 */
import { execFileSync } from 'node:child_process'
import { type Browser, chromium } from 'playwright-core'

function chromiumPath(): string {
  const fromEnv = process.env.CHROMIUM
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv
  try {
    return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim()
  } catch {
    throw new Error('chromium not found: install Debian chromium or set CHROMIUM=/path/to/chrome')
  }
}

/**
 * Launches headless Chromium with the flags every browser bench runs under (no GPU, no
 * background networking), so their figures come from the same browser setup.
 *
 * @example
 * const browser = await launchChromium()
 * try {
 *   console.log(`Chromium ${browser.version()}`)
 * } finally {
 *   await browser.close()
 * }
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--headless=new'],
    timeout: 30_000,
  })
}
