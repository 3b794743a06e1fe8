import { type ReactNode, useEffect, useState } from 'react'
import { type FleetSettings, MAX_DEVICES } from '../fleet/fleetSettings.ts'
import { useFleet, useFleetControls } from './useFleet.ts'

const WINDOW_SIZES = [1_000, 2_000, 5_000, 10_000]
const LATENESS = [0, 5_000, 10_000, 30_000, 60_000]
const OUT_OF_ORDERNESS = [0, 1_000, 3_000]
const STORM_SECONDS = [10, 20, 30, 60]

function SettingSelect({
  label,
  field,
  options,
}: {
  readonly label: string
  readonly field: 'windowMs' | 'allowedLatenessMs' | 'outOfOrdernessMs'
  readonly options: readonly number[]
}): ReactNode {
  const fleet = useFleetControls()
  const value = useFleet((s) => s.settings[field])
  return (
    <label className="control">
      <span className="control-label">{label}</span>
      <select value={value} onChange={(e) => fleet.configure({ [field]: Number(e.target.value) } as Partial<FleetSettings>)}>
        {options.map((ms) => (
          <option key={ms} value={ms}>
            {ms / 1000} s
          </option>
        ))}
      </select>
    </label>
  )
}

/** Fleet size, with the engines recreated once the slider rests. */
function FleetSize(): ReactNode {
  const fleet = useFleetControls()
  const applied = useFleet((s) => s.settings.deviceCount)
  const [size, setSize] = useState(applied)
  useEffect(() => setSize(applied), [applied])
  useEffect(() => {
    if (size === applied) return
    const timer = setTimeout(() => fleet.configure({ deviceCount: size }), 450)
    return () => clearTimeout(timer)
  }, [fleet, size, applied])
  return (
    <label className="control control-slider">
      <span className="control-label">
        Devices <span className="mono strong">{size}</span>
      </span>
      <input type="range" min={1} max={MAX_DEVICES} value={size} onChange={(e) => setSize(Number(e.target.value))} />
    </label>
  )
}

function StormControl(): ReactNode {
  const fleet = useFleetControls()
  const running = useFleet((s) => s.storm !== null)
  const [seconds, setSeconds] = useState(20)
  return (
    <div className="control control-inline">
      <select aria-label="storm duration" value={seconds} onChange={(e) => setSeconds(Number(e.target.value))}>
        {STORM_SECONDS.map((s) => (
          <option key={s} value={s}>
            {s} s
          </option>
        ))}
      </select>
      <button type="button" className="btn btn-storm" onClick={() => fleet.startStorm(seconds * 1000)}>
        {running ? 'Storm running…' : 'Reconnect storm'}
      </button>
    </div>
  )
}

/** Controls that act on the simulation, and settings that recreate every engine. */
export function ControlBar(): ReactNode {
  const fleet = useFleetControls()
  const paused = useFleet((s) => s.paused)
  return (
    <div className="control-bar">
      <div className="control-group">
        <FleetSize />
        <SettingSelect label="Window" field="windowMs" options={WINDOW_SIZES} />
        <SettingSelect label="Allowed lateness" field="allowedLatenessMs" options={LATENESS} />
        <SettingSelect label="Out-of-orderness" field="outOfOrdernessMs" options={OUT_OF_ORDERNESS} />
        <span className="control-note">Changing these restarts every engine</span>
      </div>
      <div className="control-group">
        <button type="button" className={`btn ${paused ? 'btn-primary' : ''}`} onClick={() => fleet.setPaused(!paused)}>
          {paused ? 'Resume producers' : 'Pause producers'}
        </button>
        <StormControl />
      </div>
    </div>
  )
}
