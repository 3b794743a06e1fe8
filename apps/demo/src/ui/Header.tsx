import { useWatermark } from '@tidemark/react'
import type { ReactNode } from 'react'
import { clockTime, duration } from './timeFormat.ts'
import { useFleet } from './useFleet.ts'

function Logo(): ReactNode {
  return (
    <svg className="logo" viewBox="0 0 32 32" width="30" height="30" aria-hidden="true">
      <rect width="32" height="32" rx="8" fill="#0e7490" />
      <path d="M4 19c3 0 3-3 6-3s3 3 6 3 3-3 6-3 3 3 6 3" stroke="#e0f2fe" strokeWidth="2.2" fill="none" strokeLinecap="round" />
      <path d="M4 24c3 0 3-3 6-3s3 3 6 3 3-3 6-3 3 3 6 3" stroke="#67e8f9" strokeWidth="2.2" fill="none" strokeLinecap="round" opacity=".7" />
      <path d="M16 6v9" stroke="#fbbf24" strokeWidth="2.2" strokeLinecap="round" />
    </svg>
  )
}

/** Product name, live state, and the two clocks that matter: now and the watermark. */
export function Header(): ReactNode {
  const now = useFleet((s) => s.now)
  const paused = useFleet((s) => s.paused)
  const stormEndsAt = useFleet((s) => s.storm?.endsAt ?? null)
  const watermark = useWatermark()
  const relay = useFleet((s) => s.wiring.relay)
  const fleetId = useFleet((s) => s.wiring.fleet)
  return (
    <header className="app-header">
      <div className="brand">
        <Logo />
        <div>
          <h1>
            Tidemark <span className="brand-sub">Fleet</span>
          </h1>
          <p className="tagline">Event-time windows that show a number now, and correct it honestly when late data lands.</p>
        </div>
      </div>
      <div className="header-status">
        {stormEndsAt !== null && (
          <span className="chip chip-storm">Reconnect storm · {Math.max(0, Math.ceil((stormEndsAt - now) / 1000))} s left</span>
        )}
        <span
          className={`chip ${relay === null ? 'chip-paused' : ''}`}
          title="How devices' documents reach the dashboard: each device writes its own room on the Tidemark relay, the dashboard follows them all read-only (without a relay: BroadcastChannel between tabs of this browser)"
        >
          <span className="chip-label">Sync</span> {relay === null ? 'BroadcastChannel only' : <>relay <span className="mono">{relay.url}</span></>}
        </span>
        <span className="chip" title="This browser's fleet: rooms, channels and logs are named after it. Open ?fleet=<id> in another browser to join it.">
          <span className="chip-label">Fleet</span> <span className="mono">{fleetId}</span>
        </span>
        <span className={`chip ${paused ? 'chip-paused' : 'chip-live'}`}>
          <span className="dot" />
          {paused ? 'Producers paused' : 'Live'}
        </span>
        <span className="chip">
          <span className="chip-label">Now</span> <span className="mono">{clockTime(now)}</span>
        </span>
        <span className="chip" title="The dashboard engine's watermark and how far it trails the wall clock">
          <span className="chip-label">Watermark</span> <span className="mono">{clockTime(watermark)}</span>
          <span className="muted"> −{duration(now - watermark)}</span>
        </span>
      </div>
    </header>
  )
}
