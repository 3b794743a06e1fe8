/**
 * The embedded store: PGlite (PostgreSQL compiled to WebAssembly) in a data directory, on a
 * thread of its own.
 *
 * PGlite runs each statement synchronously on the thread that calls it. On the relay's thread a
 * batch insert, a compaction or a vacuum would hold every socket for its duration (3–20 ms each
 * on a quiet machine, more under load, many times a second under a fleet's writes), which shows
 * directly in the latency of every update waiting behind it. On a worker thread the statements
 * run beside the sockets, as PostgreSQL's do in their own process.
 */
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { lockDataDir } from './dataDirLock.ts'
import type { SqlClient, SqlQueryable, SqlResult } from './sqlClient.ts'

/**
 * What runs on the store's thread (CommonJS, no TypeScript: a worker evaluates it as is).
 * Messages in: `{ id, text, params }` runs a statement, `{ id, close: true }` closes the
 * database. Out: `{ ready: true }` or `{ failed }` once, then `{ id, rows, affected }` or
 * `{ id, error: { message, code } }` per message.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const { PGlite } = require(workerData.pglite)
const fail = (error) => ({ message: error instanceof Error ? error.message : String(error), code: error && typeof error.code === 'string' ? error.code : undefined })
// bytea (oid 17) in PostgreSQL's hex text form, through Buffer's native codec (PGlite's own reads
// and writes each byte in JavaScript). A parsed value is copied out of Buffer's shared pool: a
// message to the relay's thread would otherwise carry the pool's whole 8 KiB slab.
const BYTEA = 17
const bytea = {
  parsers: { [BYTEA]: (text) => new Uint8Array(Buffer.from(text.slice(2), 'hex')) },
  serializers: { [BYTEA]: (bytes) => '\\\\x' + Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex') },
}
PGlite.create(workerData.dataDir, bytea).then(
  (db) => {
    parentPort.on('message', (message) => {
      if (message.close) {
        db.close().then(
          () => { parentPort.postMessage({ id: message.id, rows: [], affected: 0 }); parentPort.close() },
          (error) => parentPort.postMessage({ id: message.id, error: fail(error) }),
        )
        return
      }
      db.query(message.text, message.params).then(
        (result) => parentPort.postMessage({ id: message.id, rows: result.rows, affected: result.affectedRows ?? 0 }),
        (error) => parentPort.postMessage({ id: message.id, error: fail(error) }),
      )
    })
    parentPort.postMessage({ ready: true })
  },
  (error) => parentPort.postMessage({ failed: fail(error) }),
)
`

type Reply =
  | { readonly ready: true }
  | { readonly failed: { readonly message: string; readonly code?: string } }
  | { readonly id: number; readonly rows: unknown[]; readonly affected: number }
  | { readonly id: number; readonly error: { readonly message: string; readonly code?: string } }

/** An error from the database, with PostgreSQL's SQLSTATE `code` when it has one. */
function databaseError(error: { readonly message: string; readonly code?: string }): Error {
  return Object.assign(new Error(error.message), error.code === undefined ? {} : { code: error.code })
}

/** One PGlite database on a worker thread; statements run one at a time, in order. */
class PgliteThread {
  readonly #worker: Worker
  readonly #pending = new Map<number, { resolve(result: SqlResult<unknown>): void; reject(error: Error): void }>()
  #nextId = 0
  /** Why the thread can run nothing more, once it stopped. */
  #ended: Error | undefined

  private constructor(worker: Worker) {
    this.#worker = worker
  }

  /** Starts the thread; resolves once PGlite has opened `dataDir`. */
  static open(dataDir: string): Promise<PgliteThread> {
    const pglite = createRequire(import.meta.url).resolve('@electric-sql/pglite')
    const worker = new Worker(THREAD_SOURCE, { eval: true, workerData: { pglite, dataDir }, name: 'tidemark-relay-pglite' })
    const thread = new PgliteThread(worker)
    return new Promise((resolve, reject) => {
      let state: 'opening' | 'open' | 'refused' = 'opening'
      // Listened to from the start, so that no 'error' of the thread is ever left unheard.
      const stopped = (reason: Error): void => {
        if (state === 'open') thread.#end(reason)
        else if (state === 'opening') {
          state = 'refused'
          worker.terminate().catch(() => undefined)
          reject(new Error(`PGlite could not open ${dataDir}: ${reason.message}`, { cause: reason }))
        }
        // Refused: the open already failed with its reason; the thread's end follows from it.
      }
      worker.on('error', (error) => stopped(new Error(`the PGlite thread failed: ${error.message}`, { cause: error })))
      worker.on('exit', (code) => stopped(new Error(`the PGlite thread exited (code ${code})`)))
      worker.on('message', (reply: Reply) => {
        if ('ready' in reply) {
          state = 'open'
          resolve(thread)
        } else if ('failed' in reply) stopped(databaseError(reply.failed))
        else thread.#settle(reply)
      })
    })
  }

  /** Runs one statement. */
  run<T>(message: { readonly text: string; readonly params?: readonly unknown[] } | { readonly close: true }): Promise<SqlResult<T>> {
    if (this.#ended !== undefined) return Promise.reject(this.#ended)
    const id = this.#nextId++
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (result: SqlResult<unknown>) => void, reject })
      this.#worker.postMessage({ id, ...message })
    })
  }

  /**
   * Closes the database and ends the thread, which takes its WebAssembly memory with it. The
   * thread ends even when closing the database failed (the failure is then thrown).
   */
  async close(): Promise<void> {
    try {
      await this.run({ close: true })
    } finally {
      await this.#worker.terminate()
    }
  }

  #settle(reply: Exclude<Reply, { readonly ready: true } | { readonly failed: unknown }>): void {
    const pending = this.#pending.get(reply.id)
    if (pending === undefined) return
    this.#pending.delete(reply.id)
    if ('error' in reply) pending.reject(databaseError(reply.error))
    else pending.resolve({ rows: reply.rows, affected: reply.affected })
  }

  #end(reason: Error): void {
    this.#ended ??= reason
    for (const pending of this.#pending.values()) pending.reject(this.#ended)
    this.#pending.clear()
  }
}

/**
 * Opens (creating it when new) a PGlite data directory, on a worker thread of its own.
 * Statements run one at a time; a transaction holds the database until it ends.
 *
 * A new directory is created by a first thread, which is then closed, and opened again by the
 * thread that serves: the WebAssembly memory that creating the cluster grows (about 850 MB of
 * RSS) is never returned while its thread lives, and a thread that opens a created directory
 * holds about 350 MB. Creating a directory therefore takes about half a second longer.
 *
 * A directory on disk is locked while it is open (`lockDataDir`: a `<dir>.lock` file beside it):
 * opening one that another live process, or this one, holds throws, naming the holder.
 *
 * @example
 * const sql = await openPglite('.tidemark-relay')
 * const { rows } = await sql.query<{ n: number }>('select 1 as n')
 * await sql.close()
 */
export async function openPglite(dataDir: string): Promise<SqlClient> {
  const path = directoryOf(dataDir)
  const release = path === null ? () => undefined : lockDataDir(path)
  let thread: PgliteThread
  try {
    if (path !== null && !existsSync(join(path, 'PG_VERSION'))) {
      const creator = await PgliteThread.open(dataDir)
      await bindWal(creator)
      await creator.close()
    }
    thread = await PgliteThread.open(dataDir)
    // A directory made before this setting gets it from its next open on.
    if (path !== null) await bindWal(thread)
  } catch (error) {
    release()
    throw error
  }
  /** Settles when the last statement or transaction queued so far has ended. */
  let tail: Promise<unknown> = Promise.resolve()
  const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
    const run = tail.then(work, work)
    tail = run.catch(() => undefined)
    return run
  }
  const run = <T>(text: string, params?: readonly unknown[]): Promise<SqlResult<T>> => thread.run<T>(params === undefined ? { text } : { text, params: [...params] })
  return {
    kind: 'pglite',
    query: (text, params) => exclusive(() => run(text, params)),
    transaction: (work) =>
      exclusive(async () => {
        await run('begin')
        const scoped: SqlQueryable = { query: (text, params) => run(text, params) }
        let result: Awaited<ReturnType<typeof work>>
        try {
          result = await work(scoped)
        } catch (error) {
          await run('rollback').catch((rollback: unknown) => {
            throw new Error(`${error instanceof Error ? error.message : String(error)}; rolling back failed too: ${rollback instanceof Error ? rollback.message : String(rollback)}`, { cause: error })
          })
          throw error
        }
        await run('commit')
        return result
      }),
    close: () =>
      exclusive(() => thread.run({ close: true }))
        .then(() => undefined)
        .finally(release),
  }
}

/**
 * PGlite runs no checkpointer: its write-ahead log grows until a checkpoint, which the room store
 * runs every 16 MiB it writes (`CHECKPOINT_EVERY_BYTES`). With `max_wal_size` at 64 MB a
 * checkpoint also removes the segments past it, so the log stays at about 64 MB; PostgreSQL's
 * default (1 GB) would keep up to a gigabyte of recycled segments. The setting is read at startup:
 * it takes effect from the next open.
 */
async function bindWal(thread: PgliteThread): Promise<void> {
  const { rows } = await thread.run<{ max_wal_size: string }>({ text: 'show max_wal_size' })
  if (rows[0]?.max_wal_size === '64MB') return
  await thread.run({ text: "alter system set max_wal_size = '64MB'" })
  await thread.run({ text: "alter system set min_wal_size = '32MB'" })
}

/** The filesystem path of `dataDir` (a path, or a `file://` one); null for PGlite's `memory://` and other schemes. */
function directoryOf(dataDir: string): string | null {
  const path = dataDir.startsWith('file://') ? dataDir.slice('file://'.length) : dataDir
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(path) ? null : path
}
