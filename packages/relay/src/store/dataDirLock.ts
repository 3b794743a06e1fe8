/**
 * One process at a time opens a PGlite data directory. PGlite takes no lock of its own: two
 * relays on one directory both start, each writes its own view of the files, and what one of
 * them acknowledged is lost at the next start. The relay therefore holds a lock file beside the
 * directory (`<dir>.lock`, holding its process id) while the directory is open; a lock whose
 * process is gone is stale and taken over.
 */
import { randomBytes } from 'node:crypto'
import { linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'

/** Directories this process holds, by their lock file: a second open in the same process is refused too. */
const held = new Set<string>()

/** Whether a process with this id runs (one of another user counts: signalling it is refused, not missed). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Takes the lock of the PGlite data directory at `path` (a filesystem path), or throws an error
 * naming the process that holds it. Returns the function that releases it.
 *
 * @example
 * const release = lockDataDir('.tidemark-relay')
 * try { await serve() } finally { release() }
 */
export function lockDataDir(path: string): () => void {
  const lock = `${resolve(path)}.lock`
  const refuse = (holder: string): never => {
    throw new Error(`the data directory ${path} is in use by ${holder} (lock file ${lock}); one relay at a time opens it. If no relay runs there, delete the lock file`)
  }
  if (held.has(lock)) refuse('a relay of this process')
  mkdirSync(dirname(lock), { recursive: true })
  // The lock appears with its content at once (a link to a file already written), so no other
  // process ever reads it empty and takes it for stale.
  const mine = `${lock}.${process.pid}.${randomBytes(4).toString('hex')}`
  writeFileSync(mine, `${process.pid}\n`)
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        linkSync(mine, lock)
        break
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      }
      const holder = holderOf(lock)
      if (attempt > 0 || (holder !== null && holder !== process.pid && running(holder))) refuse(holder === null ? 'another process' : `process ${holder}`)
      // Stale: its process is gone (killed, or the machine restarted). Taken over only if it is
      // still that lock once moved aside: another process may have taken it over first.
      takeOverStale(lock, holder)
    }
  } finally {
    removeIfThere(mine)
  }
  held.add(lock)
  return () => {
    if (!held.delete(lock)) return
    if (holderOf(lock) === process.pid) removeIfThere(lock)
  }
}

/**
 * Moves a stale lock (naming `holder`) out of the way: renamed to a name of this process's own
 * (one rename of one file wins), then, if what it moved names another holder (a live process took
 * the lock over meanwhile), put back where it was, unless a newer lock is already there.
 */
function takeOverStale(lock: string, holder: number | null): void {
  const aside = `${lock}.${process.pid}.stale`
  try {
    renameSync(lock, aside)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
    throw error
  }
  if (holderOf(aside) !== holder) {
    try {
      linkSync(aside, lock)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
  }
  removeIfThere(aside)
}

/** The process id a lock file names, or null when it names none or is gone. */
function holderOf(lock: string): number | null {
  let text: string
  try {
    text = readFileSync(lock, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
  const pid = Number.parseInt(text, 10)
  return Number.isSafeInteger(pid) && pid > 0 ? pid : null
}

function removeIfThere(lock: string): void {
  try {
    unlinkSync(lock)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
}
