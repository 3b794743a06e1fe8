/**
 * A bare Chrome DevTools Protocol client over `--remote-debugging-pipe`, for what Playwright
 * cannot do: freeze a page. Playwright turns on focus emulation for every page it attaches to,
 * which keeps the page visible, and Chromium never freezes a visible page
 * (`Page.setWebLifecycleState { state: 'frozen' }` then answers and does nothing). Here the
 * page is a hidden background tab of a browser Playwright is not attached to, and freezes for
 * real: its timers stop, its dedicated workers stop with it, and it keeps its Web Locks.
 */
import { type ChildProcess, execSync, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable, Writable } from 'node:stream'

/** Debian's Chromium, as the Playwright config finds it (`CHROMIUM=/path` overrides). */
function chromiumPath(): string {
  const fromEnv = process.env.CHROMIUM
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv
  return execSync('command -v chromium', { encoding: 'utf8', shell: '/bin/sh' }).trim()
}

interface Pending {
  readonly resolve: (value: unknown) => void
  readonly reject: (error: Error) => void
}

interface CdpMessage {
  readonly id?: number
  readonly method?: string
  readonly params?: Record<string, unknown>
  readonly sessionId?: string
  readonly result?: unknown
  readonly error?: { readonly message: string }
}

/** A headless Chromium driven over its debugging pipe; stopped by its own PID. */
export class RawBrowser {
  readonly #process: ChildProcess
  readonly #out: Writable
  readonly #pending = new Map<number, Pending>()
  readonly #profile: string
  #next = 1

  constructor() {
    this.#profile = mkdtempSync(join(tmpdir(), 'tidemark-raw-cdp-'))
    this.#process = spawn(
      chromiumPath(),
      ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--headless', '--remote-debugging-pipe', `--user-data-dir=${this.#profile}`, '--no-first-run', '--no-default-browser-check', 'about:blank'],
      { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] },
    )
    this.#out = this.#process.stdio[3] as Writable
    let buffer = ''
    ;(this.#process.stdio[4] as Readable).on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8')
      for (let end = buffer.indexOf('\0'); end >= 0; end = buffer.indexOf('\0')) {
        const message = JSON.parse(buffer.slice(0, end)) as CdpMessage
        buffer = buffer.slice(end + 1)
        if (message.id === undefined) continue
        const pending = this.#pending.get(message.id)
        this.#pending.delete(message.id)
        if (message.error !== undefined) pending?.reject(new Error(message.error.message))
        else pending?.resolve(message.result)
      }
    })
  }

  send<T = Record<string, unknown>>(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<T> {
    const id = this.#next++
    this.#out.write(`${JSON.stringify({ id, method, params, ...(sessionId === undefined ? {} : { sessionId }) })}\0`)
    return new Promise((resolve, reject) => this.#pending.set(id, { resolve: resolve as (value: unknown) => void, reject }))
  }

  /** Opens `url` in a new tab (in a window of its own with `newWindow`), with `initScript` run before the page's scripts. */
  async open(url: string, options: { readonly newWindow?: boolean; readonly initScript?: string } = {}): Promise<RawPage> {
    const { targetId } = await this.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank', newWindow: options.newWindow ?? false })
    const { sessionId } = await this.send<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true })
    const page = new RawPage(this, targetId, sessionId)
    await page.send('Page.enable')
    if (options.initScript !== undefined) await page.send('Page.addScriptToEvaluateOnNewDocument', { source: options.initScript })
    await page.send('Page.navigate', { url })
    return page
  }

  async close(): Promise<void> {
    const exited = new Promise((resolve) => this.#process.once('exit', resolve))
    await Promise.race([this.send('Browser.close').catch(() => {}), new Promise((resolve) => setTimeout(resolve, 3_000))])
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3_000))])
    if (this.#process.exitCode === null && this.#process.pid !== undefined) process.kill(this.#process.pid, 'SIGKILL')
    rmSync(this.#profile, { recursive: true, force: true, maxRetries: 3 })
  }
}

/** One tab of a `RawBrowser`. */
export class RawPage {
  readonly browser: RawBrowser
  readonly targetId: string
  readonly sessionId: string

  constructor(browser: RawBrowser, targetId: string, sessionId: string) {
    this.browser = browser
    this.targetId = targetId
    this.sessionId = sessionId
  }

  send<T = Record<string, unknown>>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    return this.browser.send<T>(method, params, this.sessionId)
  }

  /** Evaluates `expression` (awaiting a promise) and returns its JSON value. */
  async evaluate<T>(expression: string, timeoutMs = 30_000): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`evaluate timed out: ${expression.slice(0, 80)}`)), timeoutMs)
    })
    try {
      const reply = await Promise.race([
        this.send<{ result: { value?: unknown }; exceptionDetails?: { text: string; exception?: { description?: string } } }>('Runtime.evaluate', {
          expression,
          awaitPromise: true,
          returnByValue: true,
        }),
        timeout,
      ])
      if (reply.exceptionDetails !== undefined) throw new Error(reply.exceptionDetails.exception?.description ?? reply.exceptionDetails.text)
      return reply.result.value as T
    } finally {
      clearTimeout(timer)
    }
  }

  /** Polls `expression` until it is truthy. */
  async waitFor(expression: string, timeoutMs = 30_000): Promise<void> {
    const end = Date.now() + timeoutMs
    for (;;) {
      const ok = await this.evaluate<boolean>(`(() => { try { return !!(${expression}) } catch { return false } })()`).catch(() => false)
      if (ok) return
      if (Date.now() > end) throw new Error(`waitFor timed out: ${expression}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  freeze(): Promise<unknown> {
    return this.send('Page.setWebLifecycleState', { state: 'frozen' })
  }

  thaw(): Promise<unknown> {
    return this.send('Page.setWebLifecycleState', { state: 'active' })
  }

  close(): Promise<unknown> {
    return this.browser.send('Target.closeTarget', { targetId: this.targetId })
  }
}
