import { createContext, useContext } from 'react'
import type { EngineFeed } from '@tidemark/engine'

/** The feed of the nearest `EngineProvider`; `null` outside one. */
export const EngineContext = createContext<EngineFeed | null>(null)

/** The nearest provider's feed; throws a clear error outside `<EngineProvider>`. */
export function useEngineFeed(hook: string): EngineFeed {
  const feed = useContext(EngineContext)
  if (feed === null) throw new Error(`${hook} must be used inside <EngineProvider engine={…}>`)
  return feed
}
