import { useEffect, useMemo, useRef, useSyncExternalStore } from 'react'
import { useEngineFeed } from './engineContext.ts'
import { EngineObserver } from './engineObserver.ts'
import type { EngineSlice } from './engineSlice.ts'
import { shallowEqual } from './structuralSharing.ts'

const whole = <T>(value: T): T => value

/**
 * The one hook every public hook is built on: an observer of `slice` under the
 * nearest provider, read through `useSyncExternalStore`, narrowed by
 * `selector`. The selection is recomputed only when the observer's snapshot
 * changed, and kept by identity while `isEqual` (default: `Object.is` for the
 * whole slice, `shallowEqual` for a selection) says it is the same.
 */
export function useEngineSlice<T, S = T>(
  hook: string,
  slice: EngineSlice<T>,
  selector?: (value: T) => S,
  isEqual?: (a: S, b: S) => boolean,
): S {
  const feed = useEngineFeed(hook)
  const select = selector ?? (whole as (value: T) => S)
  const same = isEqual ?? (selector === undefined ? Object.is : shallowEqual)
  // biome-ignore lint/correctness/useExhaustiveDependencies: a slice is known by its id; a new object with the same id reads the same state, and a new id must get a new observer in this very render.
  const observer = useMemo(() => new EngineObserver(feed, slice), [feed, slice.id])

  // The selection last rendered, so a re-created selector (an inline arrow)
  // that selects an equal value keeps the rendered identity.
  const rendered = useRef<{ readonly selection: S } | null>(null)
  const getSelection = useMemo(() => {
    let memo: { readonly snapshot: T; readonly selection: S } | null = null
    return (): S => {
      const snapshot = observer.getSnapshot()
      if (memo !== null && Object.is(memo.snapshot, snapshot)) return memo.selection
      let selection = select(snapshot)
      const previous = memo ?? rendered.current
      if (previous !== null && same(previous.selection, selection)) selection = previous.selection
      memo = { snapshot, selection }
      return selection
    }
  }, [observer, select, same])

  const selection = useSyncExternalStore(observer.subscribe, getSelection, getSelection)
  useEffect(() => {
    rendered.current = { selection }
  }, [selection])
  return selection
}
