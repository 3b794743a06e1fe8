/** The storm report: what `StormResult.summary()` prints. */
import { describeToggles } from './networkToggles.ts'
import type { StormFigures } from './stormResult.ts'

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`
}

/**
 * A finished storm's figures as a few printable lines: seed and replay command, pages,
 * toggles (intended against acknowledged and seen), events (produced, counted, late lane,
 * receipts), convergence and the number of problems.
 *
 * @example
 * console.log(describeStorm(storm))
 * // storm seed=708397302 (replay: STORM_SEED=708397302) seconds=60 stormMs=60205 network=partition pages=8 ...
 */
export function describeStorm(storm: StormFigures): string {
  return [
    `storm seed=${storm.seed} (replay: STORM_SEED=${storm.seed}) seconds=${storm.seconds} stormMs=${storm.stormMs} network=${storm.network} ` +
      `pages=${storm.pages} (${plural(storm.devices, 'device')} in their own contexts, ${plural(storm.dashboards, 'dashboard tab')}) ingest=${storm.ingest.batch} every ${storm.ingest.everyMs} ms`,
    describeToggles(storm.toggles),
    `events: produced=${storm.truth.produced} counted=${storm.truth.counted} lateLane=${storm.truth.lateLane} ` +
      `(receipts: accepted=${storm.receipts.accepted} beyondLateness=${storm.receipts.beyondLateness} duplicates=${storm.receipts.duplicates} rejected=${storm.receipts.rejected}) ` +
      `windows=${storm.truth.windows} dashboards=[${storm.dashboardCounts.join(', ')}]`,
    `converged=${storm.converged} convergenceMs=${storm.convergenceMs} (after the last device was back online; dashboards on the ground truth, devices on ${storm.devicesShow === 'own' ? 'their own readings' : 'the ground truth'}) problems=${storm.problems.length}`,
  ].join('\n')
}
