/**
 * One contender for a data directory's lock, for the lock race test: waits until the instant
 * given, tries the lock, prints OK, REFUSED (the lock's refusal) or ERROR <message> (any other
 * failure), and holds what it took while the others try.
 */
import { lockDataDir } from '../../src/store/dataDirLock.ts'

const [dir, at] = [process.argv[2] as string, Number(process.argv[3])]
while (Date.now() < at) {
  // Spin to the shared start instant: the contenders try at once.
}
try {
  lockDataDir(dir)
  console.log('OK')
} catch (error) {
  // REFUSED only for the lock's refusal (another process holds it); any other failure is printed
  // as such, so the race test counts it as no outcome it expects.
  const message = error instanceof Error ? error.message : String(error)
  console.log(/ is in use by (process \d+|another process) /.test(message) ? 'REFUSED' : `ERROR ${message}`)
}
// Held (not released) until every contender has tried: a process that has exited leaves a stale lock.
setTimeout(() => undefined, 2_500)
