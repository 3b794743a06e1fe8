// @vitest-environment happy-dom
import { act, createElement } from 'react'
import { createRoot } from 'react-dom/client'
import { afterEach, describe, expect, it } from 'vitest'
import type { DeviceStatus } from '../src/fleet/deviceStatus.ts'
import type { Fleet } from '../src/fleet/fleet.ts'
import { DEFAULT_SETTINGS } from '../src/fleet/fleetSettings.ts'
import type { DeviceRow, FleetSnapshot } from '../src/fleet/fleetSnapshot.ts'
import { DeviceTable } from '../src/ui/DeviceTable.tsx'
import { FleetContext } from '../src/ui/useFleet.ts'

;(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true

function statusOf(id: string, online: boolean): DeviceStatus {
  return {
    id,
    source: id,
    epoch: 'w2000-l10000-a1',
    phase: 'running',
    online,
    offlineSince: online ? null : 1_000,
    paused: false,
    syncState: online ? 'connected' : 'offline',
    pending: 0,
    lastSync: 1_000,
    relayState: online ? 'connected' : 'offline',
    relayRefusal: null,
    skewMs: 0,
    seq: 10,
    accepted: 10,
    duplicates: 0,
    rejected: 0,
    durable: 10,
    offlineReadings: 0,
    walRecords: 1,
    walBytes: 100,
    docBytes: 100,
    recovery: null,
    error: null,
  }
}

function rowOf(id: string, online: boolean): DeviceRow {
  return {
    id,
    host: { state: 'connected', mode: 'shared', instance: `${id}-instance`, restarts: 0, reason: null },
    tab: false,
    status: statusOf(id, online),
    error: null,
    lastHeard: 1_000,
  }
}

/** Just what DeviceTable reads of the fleet: its snapshot and its controls. */
function fleetOf(devices: readonly DeviceRow[]): Fleet {
  const snapshot = {
    devices,
    now: 2_000,
    introDevice: null,
    settings: DEFAULT_SETTINGS,
    wiring: { relay: null, relayNotice: null, namespace: 'tidemark-demo', fleet: 'f1' },
  } as unknown as FleetSnapshot
  return { subscribe: () => () => {}, snapshot: () => snapshot, setOnline: () => {}, crash: async () => {} } as unknown as Fleet
}

let unmount: (() => void) | null = null
afterEach(() => {
  unmount?.()
  unmount = null
})

function render(devices: readonly DeviceRow[]): HTMLElement {
  const container = document.createElement('div')
  document.body.append(container)
  const root = createRoot(container)
  act(() => root.render(createElement(FleetContext, { value: fleetOf(devices) }, createElement(DeviceTable))))
  unmount = () => {
    act(() => root.unmount())
    container.remove()
  }
  return container
}

/** The accessible name of a control: its aria-label, else its text. */
const nameOf = (element: Element): string => element.getAttribute('aria-label') ?? element.textContent ?? ''

describe('DeviceTable accessibility', () => {
  it("names every row's controls after their device, so a screen reader or voice control can tell twelve Disconnect buttons apart", () => {
    const container = render([rowOf('d01', true), rowOf('d02', false), rowOf('d03', true)])
    const names = [...container.querySelectorAll('.device-row button, .device-row a')].map(nameOf)
    expect(names).toEqual([
      'Disconnect d01',
      'Crash d01',
      'Tab ↗ d01',
      'Reconnect d02',
      'Crash d02',
      'Tab ↗ d02',
      'Disconnect d03',
      'Crash d03',
      'Tab ↗ d03',
    ])
    // Each name starts with the words shown on the control (WCAG 2.5.3, label in name).
    for (const control of container.querySelectorAll('.device-row button, .device-row a')) expect(nameOf(control).startsWith(control.textContent ?? '')).toBe(true)
  })

  it('gives every column a header, the actions column included', () => {
    const container = render([rowOf('d01', true)])
    const headers = [...container.querySelectorAll('.device-table thead th')].map((th) => th.textContent?.trim())
    expect(headers.at(-1)).toBe('Actions')
    expect(headers.every((text) => text !== undefined && text !== '')).toBe(true)
  })
})
