/**
 * The run's Redis server's own counters (`INFO stats` over a plain socket): how many commands it
 * processed, which with the relays' Redis scale-out means publishes and (un)subscribes, so a
 * phase's count per device update shows what one update costs in Redis traffic.
 */
import { connect } from 'node:net'

/**
 * Counters of `INFO stats`.
 *
 * @example
 * const stats: RedisStats = { commandsProcessed: 1_204_311, netInputBytes: 3_100_000_000, netOutputBytes: 6_200_000_000 }
 */
export interface RedisStats {
  readonly commandsProcessed: number
  readonly netInputBytes: number
  readonly netOutputBytes: number
}

/**
 * Reads `INFO stats` from the Redis server on 127.0.0.1:`port`.
 *
 * @example
 * const before = await redisStats(redis.port)
 */
export function redisStats(port: number, timeoutMs = 10_000): Promise<RedisStats> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`redis INFO: no answer within ${timeoutMs} ms`))
    }, timeoutMs)
    socket.setEncoding('utf8')
    socket.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    socket.on('data', (chunk: string) => {
      text += chunk
      // A bulk string: `$<length>\r\n<body>\r\n`.
      const header = /^\$(\d+)\r\n/.exec(text)
      if (header === null || text.length < header[0].length + Number(header[1]) + 2) return
      clearTimeout(timer)
      socket.end()
      const field = (name: string): number => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN)
      resolve({ commandsProcessed: field('total_commands_processed'), netInputBytes: field('total_net_input_bytes'), netOutputBytes: field('total_net_output_bytes') })
    })
    socket.write('INFO stats\r\n')
  })
}
