import type { Engine } from '@tidemark/engine'
import { useState } from 'react'

interface DeviceControlsProps {
  readonly engine: Engine
  readonly source: string
  /** Readings of this source found in IndexedDB when the tab opened. */
  readonly recovered: number
}

/** The device side: one button that ingests the next reading of this tab's source. */
export function DeviceControls({ engine, source, recovered }: DeviceControlsProps) {
  const [next, setNext] = useState(recovered + 1)
  const [durable, setDurable] = useState(recovered)
  const add = (): void => {
    const seq = next
    setNext(seq + 1)
    const receipt = engine.ingest([{ id: `${source}#${seq}`, source, seq, ts: seq * 1_000, value: 1 }])
    receipt.durable.then(
      () => setDurable((count) => Math.max(count, seq)),
      (error: unknown) => console.error('not durable', error),
    )
  }
  return (
    <section>
      <p>
        source <output data-testid="source">{source}</output>, recovered <output data-testid="recovered">{recovered}</output>,
        durable <output data-testid="durable">{durable}</output>
      </p>
      <button type="button" onClick={add}>
        Add reading
      </button>
    </section>
  )
}
