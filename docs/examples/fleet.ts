import { boundedOutOfOrderness, type EngineOptions, tumbling } from '@tidemark/engine'

// #region options
/**
 * What every replica of the fleet shares. Replicas merge only with the same window specs and
 * allowed lateness; the watermark, idle timeout and retention are each replica's own choice.
 */
export const fleetOptions: EngineOptions = {
  windows: tumbling(60_000), // one-minute windows, id 'tumbling:60000'
  watermark: boundedOutOfOrderness(5_000), // a device's readings may arrive 5 s out of order
  allowedLateness: 10 * 60_000, // a fired minute takes corrections for 10 more minutes
  idleTimeout: 30_000, // a device silent for 30 s stops holding the watermark back
}

/**
 * The fleet on the relay: each device writes the room `fleet-a/<its source>`, the relay lists
 * them in `fleet-a/_directory`, and the fleet's tabs share the channel `tidemark:fleet-a`.
 */
export const FLEET = 'fleet-a'
// #endregion options
