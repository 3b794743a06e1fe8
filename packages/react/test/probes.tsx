import { createManualScheduler, type ResultQuery, type WindowResult } from '@tidemark/engine'
import { act, render, screen } from '@testing-library/react'
import { type ReactNode, useState } from 'react'
import { EngineProvider } from '../src/EngineProvider.tsx'
import { useEngineStats } from '../src/useEngineStats.ts'
import { useLateEvents } from '../src/useLateEvents.ts'
import { useSyncStatus } from '../src/useSyncStatus.ts'
import { useWatermark } from '../src/useWatermark.ts'
import { useWindow } from '../src/useWindow.ts'
import { useWindowHistory } from '../src/useWindowHistory.ts'
import { useWindows } from '../src/useWindows.ts'
import { FakeEngine } from '@tidemark/engine/testing'
import { MINUTE } from './windowIds.ts'

/**
 * Components that record what they rendered, shared by the hook tests, and a
 * `setup` that mounts them under a provider with a manual scheduler.
 */

// What the components below saw; `resetProbes()` before each test.
const renderCounts = new Map<string, number>()
/** Renders of the component named `name` since the last reset. */
export const renders = (name: string): number => renderCounts.get(name) ?? 0
const hit = (name: string): void => {
  renderCounts.set(name, renders(name) + 1)
}
/** Values the components rendered, in order (`Sum`: "key=sum"; `Rows`, `Sums`: their arrays). */
export const rendered: unknown[] = []

export function resetProbes(): void {
  renderCounts.clear()
  rendered.length = 0
}

export function Sum({ name, seriesKey = 'temp', start = 0 }: { name: string; seriesKey?: string; start?: number }) {
  hit(name)
  const result = useWindow(MINUTE, seriesKey, start)
  rendered.push(`${seriesKey}=${result?.sum ?? 'none'}`)
  return <output data-testid={name}>{result?.sum ?? 'none'}</output>
}

export function Latest() {
  const latest = useWindow(MINUTE, 'temp', 0)
  return <output data-testid="latest">{latest && `${latest.status} r${latest.revision} ${latest.sum}`}</output>
}

// Its own component, so nothing else re-renders it when only the history changes.
export function History() {
  const history = useWindowHistory(MINUTE, 'temp', 0)
  return <output data-testid="history">{history.map((r) => `${r.status}:${r.sum}`).join(' ')}</output>
}

export function Rows({ query }: { query: ResultQuery }) {
  hit('rows')
  const rows = useWindows(query)
  rendered.push(rows)
  return <output data-testid="rows">{rows.map((r) => `${r.start}:${r.sum}`).join(' ')}</output>
}

export function RowCount({ query }: { query: ResultQuery }) {
  hit('count')
  const count = useWindows(query, (rows) => rows.length)
  return <output data-testid="count">{count}</output>
}

export function Sums({ label = '' }: { label?: string }) {
  hit('sums')
  // An inline selector that returns a new array on every call.
  const sums = useWindows(undefined, (rows: readonly WindowResult[]) => rows.map((r) => r.sum))
  rendered.push(sums)
  return <output data-testid="sums">{`${label}${sums.join(',')}`}</output>
}

export function LateLane() {
  hit('late')
  const late = useLateEvents()
  return <output data-testid="late">{late.map((l) => `${l.event.id}:${l.reason}`).join(' ')}</output>
}

export function Stats() {
  hit('stats')
  return <output data-testid="ingested">{useEngineStats().ingested}</output>
}

export function Lag() {
  hit('lag')
  return <output data-testid="lag">{useEngineStats((s) => s.watermarkLag)}</output>
}

export function SyncBadge() {
  hit('sync')
  const status = useSyncStatus()
  return <output data-testid="sync">{`${status.state} ${status.peers}${status.refusal === null ? '' : ` refused: ${status.refusal}`}`}</output>
}

export function Watermark() {
  hit('watermark')
  return <output data-testid="watermark">{useWatermark()}</output>
}

export function Dashboard() {
  useWindows()
  useWindow(MINUTE, 'temp', 0)
  useWindowHistory(MINUTE, 'temp', 0)
  useLateEvents()
  useEngineStats()
  useSyncStatus()
  return null
}

/** Calls `write` during its first render: after earlier siblings rendered, before any effect ran. */
export function WriteDuringRender({ write }: { write: () => void }) {
  useState(write)
  return null
}

export function Orphan() {
  useWindow(MINUTE, 'temp', 0)
  return null
}

export function setup(ui: ReactNode, engine = new FakeEngine()) {
  const scheduler = createManualScheduler()
  const wrap = (children: ReactNode, target = engine) => (
    <EngineProvider engine={target} scheduler={scheduler}>
      {children}
    </EngineProvider>
  )
  const view = render(wrap(ui))
  const frame = (): void => act(() => scheduler.flush())
  const rerender = (next: ReactNode, target = engine): void => view.rerender(wrap(next, target))
  return { engine, scheduler, frame, view, rerender }
}

export const text = (testId: string): string | null => screen.getByTestId(testId).textContent
