import { createContext, use, useSyncExternalStore } from 'react'
import type { Fleet } from '../fleet/fleet.ts'
import type { FleetSnapshot } from '../fleet/fleetSnapshot.ts'

export const FleetContext = createContext<Fleet | null>(null)

/** The fleet, for its controls. */
export function useFleetControls(): Fleet {
  const fleet = use(FleetContext)
  if (fleet === null) throw new Error('useFleet needs a <FleetContext> above it')
  return fleet
}

/**
 * A slice of the fleet snapshot. `selector` must return a primitive or a
 * part of the snapshot (not a new object), so that an unchanged slice does
 * not render.
 */
export function useFleet<S>(selector: (snapshot: FleetSnapshot) => S): S {
  const fleet = useFleetControls()
  return useSyncExternalStore(fleet.subscribe, () => selector(fleet.snapshot()))
}
