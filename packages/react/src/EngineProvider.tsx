import { type ReactElement, type ReactNode, useMemo, useState } from 'react'
import { EngineContext } from './engineContext.ts'
import { createFrameScheduler, EngineFeed, type FrameScheduler, type ObservedEngine } from '@tidemark/engine'

/**
 * Props of `EngineProvider`.
 *
 * @example
 * const props: EngineProviderProps = { engine, scheduler: createManualScheduler() }
 */
export interface EngineProviderProps {
  /** The engine whose state the hooks below read. */
  readonly engine: ObservedEngine
  /** When frames run; default `createFrameScheduler()` (one per provider). */
  readonly scheduler?: FrameScheduler | undefined
  readonly children?: ReactNode
}

/**
 * Gives the hooks below it an engine. All of them share one engine
 * subscription, held only while at least one hook is mounted, and see the
 * engine's changes at most once per frame.
 *
 * @example
 * const engine = createEngine({ windows: tumbling(60_000) })
 * createRoot(el).render(
 *   <EngineProvider engine={engine}>
 *     <Dashboard />
 *   </EngineProvider>,
 * )
 */
export function EngineProvider({ engine, scheduler, children }: EngineProviderProps): ReactElement {
  const [defaultScheduler] = useState(createFrameScheduler)
  const frameScheduler = scheduler ?? defaultScheduler
  const feed = useMemo(() => new EngineFeed(engine, frameScheduler), [engine, frameScheduler])
  // `.Provider`: React 18 renders a bare context as a consumer (and throws); 19 takes either.
  return <EngineContext.Provider value={feed}>{children}</EngineContext.Provider>
}
