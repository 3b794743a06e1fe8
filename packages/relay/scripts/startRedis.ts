/**
 * Starts a redis-server for trying the relay's scale-out locally; Ctrl-C stops it.
 *
 *   pnpm --filter @tidemark/relay redis            # a free port
 *   REDIS_PORT=6390 pnpm --filter @tidemark/relay redis
 *
 * It prints `redis ready {"url":"redis://127.0.0.1:<port>","pid":<pid>}`; start relays with
 * that REDIS_URL (and one shared DATABASE_URL for a durable fleet).
 */
import { startRedisServer } from './redisServer.ts'

const portText = process.env.REDIS_PORT
const port = portText === undefined || portText === '' ? undefined : Number(portText)
if (port !== undefined && (!Number.isSafeInteger(port) || port < 1 || port > 65_535)) {
  process.stderr.write(`REDIS_PORT: must be a port number, got ${JSON.stringify(portText)}\n`)
  process.exit(2)
}
const redis = await startRedisServer(port === undefined ? {} : { port })
process.stdout.write(`redis ready ${JSON.stringify({ url: redis.url, pid: redis.pid })}\n`)
const stop = (): void => {
  redis.stop().then(() => process.exit(0))
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
