/**
 * The relay's HTTP routes, beside the WebSocket upgrade: `GET /healthz`, `GET /metrics` and,
 * for local development, `GET /dev/token`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { DevTokenIssuer } from '../auth/devTokenIssuer.ts'
import type { MetricGauges, RelayMetrics } from '../metrics/relayMetrics.ts'
import { describeError } from '../relayLog.ts'

/**
 * What the routes read.
 *
 * @example
 * const routes = relayHttp({ metrics, gauges, checkStore: () => store.check(), devTokens: undefined, closing: () => false })
 */
export interface RelayHttpDeps {
  readonly metrics: RelayMetrics
  readonly gauges: () => Promise<MetricGauges>
  /** Resolves when the store answers a query. */
  readonly checkStore: () => Promise<void>
  readonly devTokens: DevTokenIssuer | undefined
  readonly closing: () => boolean
}

/**
 * The request handler.
 *
 * @example
 * http.createServer(relayHttp(deps))
 */
export function relayHttp(deps: RelayHttpDeps): (request: IncomingMessage, response: ServerResponse) => void {
  return (request, response) => {
    respond(deps, request, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' })
      response.end(`internal error: ${describeError(error)}\n`)
    })
  }
}

async function respond(deps: RelayHttpDeps, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const text = (status: number, body: string, headers: Record<string, string> = {}): void => {
    response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers }).end(body)
  }
  // A request target no URL parses (`http://[/`) is the client's error, not the relay's.
  let url: URL
  try {
    url = new URL(request.url ?? '/', 'http://relay')
  } catch {
    return text(400, 'bad request target\n')
  }
  if (request.method !== 'GET' && request.method !== 'HEAD') return text(405, 'GET only\n', { allow: 'GET, HEAD' })
  if (url.pathname === '/healthz') {
    if (deps.closing()) return text(503, 'shutting down\n')
    try {
      await deps.checkStore()
      return text(200, 'ok\n')
    } catch (error) {
      return text(503, `store unavailable: ${describeError(error)}\n`)
    }
  }
  if (url.pathname === '/metrics') return text(200, deps.metrics.render(await deps.gauges()), { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' })
  if (url.pathname === '/dev/token' && deps.devTokens !== undefined) {
    // Asked for this machine by name: a website whose name was made to resolve to 127.0.0.1 (DNS
    // rebinding) asks as its own origin, which needs no CORS header, but under its own name.
    if (!loopbackHost(request.headers.host)) {
      response.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'dev tokens are served to requests for 127.0.0.1, localhost or [::1] only (the Host header)' }))
      return
    }
    const result = await deps.devTokens.issue(url.searchParams)
    const status = 'token' in result ? 200 : 400
    // A local page on another port (a demo, a test page) fetches its tokens here; a page of any other origin may not read them.
    // It may fetch them with credentials too (a token function written for the app's login sends its cookies): the browser
    // gives a credentialed answer to the page only with this second header. The relay reads no cookie.
    const origin = loopbackOrigin(request.headers.origin)
    const cors: Record<string, string> = origin === null ? {} : { 'access-control-allow-origin': origin, 'access-control-allow-credentials': 'true' }
    response.writeHead(status, { 'content-type': 'application/json', vary: 'Origin', ...cors }).end(JSON.stringify(result))
    return
  }
  return text(404, 'not found: the relay serves WebSocket upgrades, /healthz and /metrics\n')
}

/** Whether a request's `Host` names this machine (`127.0.0.1:8787`, `localhost`, `[::1]:8787`, in any case or spelling a URL reads the same). */
function loopbackHost(host: string | undefined): boolean {
  if (host === undefined || host === '') return false
  try {
    return isLoopbackName(new URL(`http://${host}`).hostname)
  } catch {
    return false
  }
}

function isLoopbackName(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname)
}

/** `origin` when it is a page served from this machine (`http://127.0.0.1:5173`, `http://localhost:3000`, `http://[::1]:8080`), else null. */
function loopbackOrigin(origin: string | undefined): string | null {
  if (origin === undefined) return null
  let url: URL
  try {
    url = new URL(origin)
  } catch {
    return null
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null
  if (url.origin !== origin) return null
  return isLoopbackName(url.hostname) ? origin : null
}
