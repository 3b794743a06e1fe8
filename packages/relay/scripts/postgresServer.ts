/**
 * Starts a PostgreSQL server for the relay's tests and for `pnpm bench:relay --store=postgres`
 * (the relays of a run sharing one database), from Debian's binaries of the newest major version
 * installed (`/usr/lib/postgresql/<version>/bin`, `postgresBin`): a fresh `initdb` in a temporary
 * directory, its own port on 127.0.0.1, trust authentication, `fsync=off` (nothing outlives the
 * process), stopped by its PID.
 * As root, the server runs as the `postgres` user (PostgreSQL refuses to run as root).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { freePort } from './redisServer.ts'

/** Where Debian installs each PostgreSQL major version: `<version>/bin`. */
const POSTGRESQL_ROOT = '/usr/lib/postgresql'

/** Compares version directory names (`9.6`, `15`, `17`) numerically, part by part. */
function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number)
  const pb = b.split('.').map(Number)
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0)
    if (d !== 0) return d
  }
  return 0
}

/**
 * The bin directory of the newest PostgreSQL installed: the highest `/usr/lib/postgresql/<version>/bin`
 * (by version) holding `postgres`. Throws naming what is missing: the server, or its `initdb`.
 *
 * @example
 * postgresBin() // '/usr/lib/postgresql/17/bin' when 15 and 17 are installed
 */
export function postgresBin(): string {
  const versions = existsSync(POSTGRESQL_ROOT) ? readdirSync(POSTGRESQL_ROOT).filter((name) => /^\d+(\.\d+)*$/.test(name)) : []
  const servers = versions.filter((version) => existsSync(join(POSTGRESQL_ROOT, version, 'bin', 'postgres'))).sort(compareVersions)
  const newest = servers.at(-1)
  if (newest === undefined) {
    const found = versions.length === 0 ? `no version directory in ${POSTGRESQL_ROOT}` : `versions ${versions.join(', ')} without bin/postgres`
    throw new Error(
      `PostgreSQL server binaries not found: no ${POSTGRESQL_ROOT}/<version>/bin/postgres (${found}); install them with apt-get install postgresql (or bash scripts/setup.sh)`,
    )
  }
  const bin = join(POSTGRESQL_ROOT, newest, 'bin')
  if (!existsSync(join(bin, 'initdb'))) throw new Error(`PostgreSQL ${newest}: ${bin} has postgres but no initdb; reinstall postgresql-${newest}`)
  return bin
}

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

/**
 * Initializes a database cluster in a new temporary directory, starts the server on a free port
 * and waits (up to 30 s) until it accepts connections. A server that fails to start is killed
 * and its directory removed.
 *
 * @example
 * const postgres = await startPostgres()
 * const relay = await spawnRelay('A', { DATABASE_URL: postgres.url, TIDEMARK_AUTH_SECRET: secret })
 * await postgres.stop()
 */
export async function startPostgres(): Promise<PostgresServer> {
  const bin = postgresBin()
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-postgres-'))
  const data = join(dir, 'data')
  const prefix = asPostgres()
  if (prefix.length > 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString())
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString())
    chownSync(dir, uid, gid)
  }
  const run = (command: string, args: string[]): [string, string[]] => {
    const full = [...prefix, join(bin, command), ...args]
    return [full[0] as string, full.slice(1)]
  }
  const [initdb, initArgs] = run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'])
  try {
    execFileSync(initdb, initArgs, { stdio: 'pipe' })
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
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
  const abandon = async (reason: string): Promise<never> => {
    if (child.pid !== undefined) {
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL')
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`${reason}:\n${output}`)
  }
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`
  const end = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null) await abandon(`postgres exited with ${child.exitCode}`)
    const client = new pg.Client({ connectionString: url })
    client.on('error', () => undefined)
    try {
      await client.connect()
      await client.end()
      break
    } catch (error) {
      await client.end().catch(() => undefined)
      if (Date.now() > end) await abandon(`postgres did not accept connections within 30 s (${String(error)})`)
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
