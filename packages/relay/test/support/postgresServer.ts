/**
 * A PostgreSQL 15 server for the tests, from Debian's binaries (/usr/lib/postgresql/15/bin):
 * a fresh `initdb` in a temporary directory, its own port on 127.0.0.1, stopped by its PID.
 * As root, the server runs as the `postgres` user (PostgreSQL refuses to run as root).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { freePort } from '../../scripts/redisServer.ts'

const BIN = '/usr/lib/postgresql/15/bin'

/** A running PostgreSQL. */
export interface PostgresServer {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string
  readonly pid: number
  /** Fast shutdown (SIGINT to its PID); resolves once it exited and its directory is removed. */
  stop(): Promise<void>
}

/** The command prefix that runs a PostgreSQL binary as `postgres` when we are root. */
function asPostgres(): string[] {
  if (process.getuid?.() !== 0) return []
  return ['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups', '--']
}

export async function startPostgres(): Promise<PostgresServer> {
  if (!existsSync(join(BIN, 'initdb')) || !existsSync(join(BIN, 'postgres'))) {
    throw new Error(`PostgreSQL 15 binaries not found in ${BIN}: install them with apt-get install postgresql-15`)
  }
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-postgres-'))
  const data = join(dir, 'data')
  const prefix = asPostgres()
  if (prefix.length > 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString())
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString())
    chownSync(dir, uid, gid)
  }
  const run = (command: string, args: string[]): [string, string[]] => {
    const full = [...prefix, join(BIN, command), ...args]
    return [full[0] as string, full.slice(1)]
  }
  const [initdb, initArgs] = run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'])
  execFileSync(initdb, initArgs, { stdio: 'pipe' })
  const port = await freePort()
  const [postgres, args] = run('postgres', ['-D', data, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${dir}`, '-c', 'fsync=off'])
  const child: ChildProcess = spawn(postgres, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`
  const end = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`postgres exited with ${child.exitCode}:\n${output}`)
    const client = new pg.Client({ connectionString: url })
    client.on('error', () => undefined)
    try {
      await client.connect()
      await client.end()
      break
    } catch (error) {
      await client.end().catch(() => undefined)
      if (Date.now() > end) {
        if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL')
        throw new Error(`postgres did not accept connections within 30 s (${String(error)}):\n${output}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  const pid = child.pid as number
  return {
    url,
    pid,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) process.kill(pid, 'SIGINT')
      await exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
