/**
 * One process at a time opens a PGlite data directory. PGlite takes no lock of its own: two
 * relays on one directory both start, each writes its own view of the files, and what one of
 * them acknowledged is lost at the next start. The relay therefore holds a lock file beside the
 * directory (`<dir>.lock`) while the directory is open; a lock whose process is gone is stale and
 * taken over.
 *
 * The lock names its process by id and, where the system says (Linux's /proc), by the machine's
 * boot and the process's start time: after a restart (a container's above all, whose relay gets
 * the same low process id each time) another process may run under the id a stale lock names,
 * and the boot and start time tell it from the lock's holder.
 */
import { randomBytes } from 'node:crypto'
import { linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'

/** Directories this process holds, by their lock file: a second open in the same process is refused too. */
const held = new Set<string>()

/** What a lock file says of its holder: its process id, and its boot and start time where known ('' when not). */
interface Holder {
  readonly pid: number
  readonly boot: string
  readonly start: string
}

/** This machine's boot, '' where the system does not say. */
function bootId(): string {
  return readOr('/proc/sys/kernel/random/boot_id').trim()
}

/** When the process `pid` started (clock ticks since boot), '' where the system does not say or it does not run. */
function startTime(pid: number): string {
  const stat = readOr(`/proc/${pid}/stat`)
  // Fields after the command name (in parentheses, which may hold spaces): the start time is the 22nd field, the 20th after it.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? ''
}

function readOr(file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return ''
  }
}

/** What this process writes in its lock. */
function ownHolder(): string {
  return `${process.pid}\n${bootId()}\n${startTime(process.pid)}\n`
}

/**
 * Whether the lock's holder still runs: a process with its id runs (one of another user counts:
 * signalling it is refused, not missed), on the same boot and started when the lock says.
 */
function running(holder: Holder): boolean {
  try {
    process.kill(holder.pid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  // Compared only where both are known: a boot this process cannot read is no other boot.
  const boot = bootId()
  if (holder.boot !== '' && boot !== '' && holder.boot !== boot) return false
  if (holder.start === '') return true
  const start = startTime(holder.pid)
  return start === '' || start === holder.start
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
  writeFileSync(mine, ownHolder())
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        linkSync(mine, lock)
        break
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      }
      const text = lockText(lock)
      const holder = text === null ? null : holderIn(text)
      if (attempt > 0 || (holder !== null && holder.pid !== process.pid && running(holder))) refuse(holder === null ? 'another process' : `process ${holder.pid}`)
      // Stale: its process is gone (killed, or the machine restarted). Taken over only if it is
      // still that lock once moved aside: another process may have taken it over first.
      if (text !== null) takeOverStale(lock, text)
    }
  } finally {
    removeIfThere(mine)
  }
  held.add(lock)
  return () => {
    if (!held.delete(lock)) return
    if (lockText(lock) === ownHolder()) removeIfThere(lock)
  }
}

/**
 * Moves a stale lock (reading `text`) out of the way: renamed to a name of this process's own
 * (one rename of one file wins), then, if what it moved reads otherwise (a live process took the
 * lock over meanwhile), put back where it was, unless a newer lock is already there.
 */
function takeOverStale(lock: string, text: string): void {
  const aside = `${lock}.${process.pid}.stale`
  try {
    renameSync(lock, aside)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
    throw error
  }
  if (lockText(aside) !== text) {
    try {
      linkSync(aside, lock)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
  }
  removeIfThere(aside)
}

/** A lock file's text, or null when it is gone. */
function lockText(lock: string): string | null {
  try {
    return readFileSync(lock, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}

/** The holder a lock's text names (its first line the process id; an older lock holds only that), or null when it names none. */
function holderIn(text: string): Holder | null {
  const [pidLine = '', boot = '', start = ''] = text.split('\n')
  const pid = Number.parseInt(pidLine, 10)
  return Number.isSafeInteger(pid) && pid > 0 ? { pid, boot: boot.trim(), start: start.trim() } : null
}

function removeIfThere(lock: string): void {
  try {
    unlinkSync(lock)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
}
