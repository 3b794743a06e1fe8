import type { RatioDefinition } from './profile.ts'

/** The headline ratios of every window profile, with the targets. */
export function windowRatios(): RatioDefinition[] {
  return [
    {
      name: 'engine/floor',
      label: 'Tidemark throughput as a share of the plain-loop floor',
      subject: 'tidemark',
      reference: 'plain-loop',
      format: 'percent',
      target: 0.25,
    },
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
