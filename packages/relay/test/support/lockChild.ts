/**
 * One contender for a data directory's lock, for the lock race test: waits until the instant
 * given, tries the lock, prints OK or REFUSED, and holds what it took while the others try.
 */
import { lockDataDir } from '../../src/store/dataDirLock.ts'

const [dir, at] = [process.argv[2] as string, Number(process.argv[3])]
while (Date.now() < at) {
  // Spin to the shared start instant: the contenders try at once.
}
try {
  lockDataDir(dir)
  console.log('OK')
} catch {
  console.log('REFUSED')
}
// Held (not released) until every contender has tried: a process that has exited leaves a stale lock.
setTimeout(() => undefined, 2_500)
