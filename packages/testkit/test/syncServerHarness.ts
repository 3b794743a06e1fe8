/**
 * Waits of the sync-server tests: for docs to reach a state, for a provider to sync. Awaits
 * real events only, each bounded by a timeout. The server itself is started and stopped by the
 * e2e storm driver's `startSyncServer` (@tidemark/sync-server), the one launcher of
 * packages/sync-server/src/server.js in TypeScript.
 */
import * as Y from 'yjs'

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** Resolves once `condition()` holds, re-checking after every update of any of `docs`. */
export function whenDocs(docs: readonly Y.Doc[], condition: () => boolean, ms: number, what: string): Promise<void> {
  const cleanups: (() => void)[] = []
  const done = new Promise<void>((resolve) => {
    const check = (): void => {
      if (condition()) resolve()
    }
    for (const doc of docs) {
      doc.on('update', check)
      cleanups.push(() => doc.off('update', check))
    }
    check()
  })
  return withTimeout(done, ms, what).finally(() => {
    for (const cleanup of cleanups) cleanup()
  })
}

/** Resolves when the provider reports `synced`. */
export function whenSynced(provider: { synced: boolean; once(name: 'sync', f: (s: boolean) => void): void }, ms: number): Promise<void> {
  if (provider.synced) return Promise.resolve()
  return withTimeout(
    new Promise<void>((resolve) => {
      const wait = (synced: boolean): void => {
        if (synced) resolve()
        else provider.once('sync', wait)
      }
      provider.once('sync', wait)
    }),
    ms,
    'provider sync',
  )
}

export function sameState(docs: readonly Y.Doc[]): boolean {
  const first = docs[0]
  if (first === undefined) return true
  const vector = Y.encodeStateVector(first)
  return docs.every((doc) => equalBytes(Y.encodeStateVector(doc), vector))
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && a.every((x, i) => x === b[i])
}
