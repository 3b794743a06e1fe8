import type { RatioDefinition } from './profile.ts'

/** The headline ratios of every window profile, with their targets (`floor`: the share of the floor to reach). */
export function windowRatios(floor = 0.35): RatioDefinition[] {
  return [
    {
      name: 'engine/floor',
      label: 'Tidemark throughput as a share of the plain-loop floor',
      subject: 'tidemark',
      reference: 'plain-loop',
      format: 'percent',
      target: floor,
    },
    ...rulesRatios(),
    ...cellsRatios(),
    {
      name: 'engine-vs-rxjs',
      label: 'Tidemark speed-up over RxJS',
      subject: 'tidemark',
      reference: 'rxjs',
      format: 'times',
      target: 20,
    },
  ]
}

/** The rules floor's ratios, for profiles that run one (`rules-loop`): what the rules cost, and what the engine costs on top. */
export function rulesRatios(): RatioDefinition[] {
  return [
    {
      name: 'rules/floor',
      label: "the rules floor (one hand-written loop keeping the engine's rules) as a share of the plain-loop floor",
      subject: 'rules-loop',
      reference: 'plain-loop',
      format: 'percent',
    },
    {
      name: 'engine/rules',
      label: 'Tidemark throughput as a share of the rules floor',
      subject: 'tidemark',
      reference: 'rules-loop',
      format: 'percent',
    },
  ]
}

/** The cells floor's ratios, for profiles that run one (`cells-loop`): what the rules and the replicated cells cost, and what the engine costs on top. */
export function cellsRatios(): RatioDefinition[] {
  return [
    {
      name: 'cells/floor',
      label: 'the cells floor (the rules floor keeping a lattice cell per source and window) as a share of the plain-loop floor',
      subject: 'cells-loop',
      reference: 'plain-loop',
      format: 'percent',
    },
    {
      name: 'engine/cells',
      label: 'Tidemark throughput as a share of the cells floor',
      subject: 'tidemark',
      reference: 'cells-loop',
      format: 'percent',
    },
  ]
}
