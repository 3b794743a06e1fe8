import { useMemo, useSyncExternalStore } from 'react'
import { useEngineFeed } from './engineContext.ts'
import { EngineObserver, type EngineSlice, shallowEqual } from '@tidemark/engine'

/**
 * The one hook every public hook is built on: an observer of the slice that
 * `makeSlice` describes, under the nearest provider, read through
 * `useSyncExternalStore`, narrowed by `selector`. The observer is kept while
 * `deps` (what names the slice, e.g. window, key and start) stay the same.
 * Without a selector the observer's snapshot is returned as is (it is already
 * structurally shared). With one, the selection is recomputed only when the
 * snapshot changed, and kept by identity while `isEqual` (default
 * `shallowEqual`) says it is the same.
 */
export function useEngineSlice<T, S = T>(
  hook: string,
  makeSlice: () => EngineSlice<T>,
  deps: readonly unknown[],
  selector?: (value: T) => S,
  isEqual?: (a: S, b: S) => boolean,
): S {
  const feed = useEngineFeed(hook)
  // biome-ignore lint/correctness/useExhaustiveDependencies: `deps` name the slice; a new `makeSlice` closure over the same deps reads the same state, and new deps must get a new observer in this very render.
  const observer = useMemo(() => new EngineObserver(feed, makeSlice()), [feed, ...deps])
  const getSelection = useMemo(
    (): (() => S) =>
      selector === undefined
        ? (observer.getSnapshot as unknown as () => S)
        : observer.select(selector, isEqual ?? shallowEqual),
    [observer, selector, isEqual],
  )
  return useSyncExternalStore(observer.subscribe, getSelection, getSelection)
}
