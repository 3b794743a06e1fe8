/**
 * What the page side touches of the browser, in one place, so it can run against a stand-in
 * (tests in Node) as well as a real page.
 */
import type { StormGlobals } from '../contract/stormPageApi.ts'

/**
 * The page's query, its global object, and where online/offline come from.
 *
 * @example
 * const environment: StormPageEnvironment = { search: '?role=device&server=ws%3A%2F%2Fx&room=r&seed=1', globals: {}, network: new EventTarget(), isOnline: () => true, now: Date.now }
 */
export interface StormPageEnvironment {
  /** `location.search`. */
  readonly search: string
  /** Receives `tidemarkStorm` / `tidemarkStormError` and holds the driver's `tidemarkStormReport`. */
  readonly globals: StormGlobals
  /** Fires `online` and `offline` (the window). */
  readonly network: EventTarget
  /** `navigator.onLine`. */
  isOnline(): boolean
  /** The clock transitions and status changes are stamped with (`Date.now`, the driver's clock too). */
  now(): number
}

/**
 * The real page: `location.search`, `globalThis`, `window` events and `navigator.onLine`.
 *
 * @example
 * const session = beginStormPage(browserEnvironment()) // what beginStormPage() does by default
 */
export function browserEnvironment(): StormPageEnvironment {
  if (typeof location === 'undefined' || typeof navigator === 'undefined' || typeof addEventListener === 'undefined') {
    throw new Error('storm page: no browser here (location, navigator, addEventListener); pass a StormPageEnvironment to beginStormPage')
  }
  return {
    search: location.search,
    globals: globalThis as StormGlobals,
    network: globalThis as unknown as EventTarget,
    isOnline: () => navigator.onLine,
    now: () => Date.now(),
  }
}
