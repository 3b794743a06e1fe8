/** Every scenario, by name, in the order a full campaign runs them. */
import type { AnyScenario } from '../scenario.ts'
import { anomalyHeavy } from './anomalies.ts'
import { correctionBursts, sustainedCorrectionChurn } from './corrections.ts'
import { crashAndReplay } from './crash.ts'
import { boundedMemoryCrossWindowReplay } from './memory.ts'
import { fragmentedReconnectBursts } from './reconnect.ts'
import { replicaPartitions } from './replicas.ts'
import { boundedWindowLaggingWatermark, fragmentedWatermarkLag } from './watermarkLag.ts'

export const SCENARIOS: readonly AnyScenario[] = [
  fragmentedWatermarkLag,
  correctionBursts,
  sustainedCorrectionChurn,
  fragmentedReconnectBursts,
  boundedWindowLaggingWatermark,
  boundedMemoryCrossWindowReplay,
  anomalyHeavy,
  replicaPartitions,
  crashAndReplay,
]

export function scenarioNamed(name: string): AnyScenario | undefined {
  return SCENARIOS.find((s) => s.name === name)
}
