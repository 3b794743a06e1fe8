import { useEffect, useMemo, useRef, useSyncExternalStore } from 'react'
import { useEngineFeed } from './engineContext.ts'
import { EngineObserver } from './engineObserver.ts'
import type { EngineSlice } from './engineSlice.ts'
import { shallowEqual } from './structuralSharing.ts'

/** Stands for "no selector" in the effect below, whose dependency must not change then. */
const WHOLE = Symbol('whole slice')

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

  // The selection last rendered, so a re-created selector (an inline arrow)
  // that selects an equal value keeps the rendered identity.
  const rendered = useRef<{ readonly selection: S } | null>(null)
  const getSelection = useMemo((): (() => S) => {
    if (selector === undefined) return observer.getSnapshot as unknown as () => S
    const same = isEqual ?? shallowEqual
    let memo: { readonly snapshot: T; readonly selection: S } | null = null
    return () => {
      const snapshot = observer.getSnapshot()
      if (memo !== null && Object.is(memo.snapshot, snapshot)) return memo.selection
      let selection = selector(snapshot)
      const previous = memo ?? rendered.current
      if (previous !== null && same(previous.selection, selection)) selection = previous.selection
      memo = { snapshot, selection }
      return selection
    }
  }, [observer, selector, isEqual])

  const selection = useSyncExternalStore(observer.subscribe, getSelection, getSelection)
  // Only selections need remembering; without a selector the dependency stays
  // the same, so React schedules no effect for each new value.
  const committed = selector === undefined ? WHOLE : selection
  useEffect(() => {
    if (committed !== WHOLE) rendered.current = { selection: committed as S }
  }, [committed])
  return selection
}
