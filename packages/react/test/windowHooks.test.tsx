import type { WindowResult } from '@tidemark/engine'
import { cleanup, render } from '@testing-library/react'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { FakeEngine } from '@tidemark/engine/testing'
import { HOUR, MINUTE } from './windowIds.ts'
import {
  History,
  Latest,
  Orphan,
  RowCount,
  Rows,
  rendered,
  renders,
  resetProbes,
  Sum,
  Sums,
  setup,
  text,
} from './probes.tsx'

beforeEach(resetProbes)
afterEach(cleanup)

describe('useWindow', () => {
  it('renders once for a burst of 50 notifications, with the last value, and not before the frame', () => {
    const engine = new FakeEngine()
    engine.emit(MINUTE, 'temp', 0, 1)
    const { frame, scheduler } = setup(<Sum name="minute" />, engine)
    expect(text('minute')).toBe('1')
    expect(renders('minute')).toBe(1)

    for (let i = 2; i <= 51; i++) engine.emit(MINUTE, 'temp', 0, i)
    expect(renders('minute')).toBe(1)
    expect(text('minute')).toBe('1')

    frame()
    expect(renders('minute')).toBe(2)
    expect(text('minute')).toBe('51')
    expect(scheduler.pending).toBe(0)
    frame()
    expect(renders('minute')).toBe(2)
  })

  it('does not render, nor read the engine, when only another key changed', () => {
    const { engine, frame } = setup(
      <>
        <Sum name="a" seriesKey="a" />
        <Sum name="b" seriesKey="b" />
      </>,
    )
    const readsBefore = engine.reads.results

    engine.emit(MINUTE, 'b', 0, 7)
    engine.emit(MINUTE, 'a', 60_000, 3) // key a, but another window
    engine.emit(HOUR, 'a', 0, 9) // key a, window start 0, but another spec
    frame()

    expect(renders('b')).toBe(2)
    expect(text('b')).toBe('7')
    expect(renders('a')).toBe(1)
    expect(text('a')).toBe('none')
    // A frame is answered from its changes: the engine's (possibly scanning) results() is not called.
    expect(engine.reads.results).toBe(readsBefore)
  })

  it('renders once for batches that touched its window among others, as remote merges do', () => {
    const { engine, frame } = setup(<Sum name="a" seriesKey="a" />)
    engine.emitMany([
      [MINUTE, 'b', 0, 1],
      [MINUTE, 'a', 0, 2],
      [MINUTE, 'c', 0, 3],
    ])
    engine.emitMany([[MINUTE, 'a', 0, 4]])
    frame()
    expect(renders('a')).toBe(2)
    expect(text('a')).toBe('4')
  })

  it('shows the new window in the very render where its arguments change', () => {
    const engine = new FakeEngine()
    engine.emit(MINUTE, 'a', 0, 1)
    engine.emit(MINUTE, 'b', 0, 2)
    const { rerender } = setup(<Sum name="s" seriesKey="a" />, engine)
    rerender(<Sum name="s" seriesKey="b" />)
    expect(rendered).toEqual(['a=1', 'b=2'])
  })

  it('shows a correction as a new revision, and the history keeps the on-time value before it', () => {
    const engine = new FakeEngine()
    engine.emit(MINUTE, 'temp', 0, 10)
    const { frame } = setup(
      <>
        <Latest />
        <History />
      </>,
      engine,
    )
    expect(text('latest')).toBe('on_time r0 10')
    expect(text('history')).toBe('on_time:10')

    const change = engine.emit(MINUTE, 'temp', 0, 12)
    expect(change.previous?.sum).toBe(10)
    expect(text('latest')).toBe('on_time r0 10')
    frame()
    expect(text('latest')).toBe('corrected r1 12')
    // The fake appends to the array it returned before: the hook must still see the correction.
    expect(text('history')).toBe('on_time:10 corrected:12')
  })

  it('empties on a retract and follows a session that moved to another start', () => {
    const engine = new FakeEngine()
    engine.emit(MINUTE, 'a', 10, 1)
    engine.emit(MINUTE, 'b', 10, 2)
    const { frame } = setup(
      <>
        <Sum name="a" seriesKey="a" start={10} />
        <Sum name="b-old" seriesKey="b" start={10} />
        <Sum name="b-new" seriesKey="b" start={5} />
      </>,
      engine,
    )
    expect([text('a'), text('b-old'), text('b-new')]).toEqual(['1', '2', 'none'])
    engine.retract(MINUTE, 'a', 10)
    engine.move(MINUTE, 'b', 10, 5, 3)
    frame()
    expect([text('a'), text('b-old'), text('b-new')]).toEqual(['none', 'none', '3'])
  })

  it('throws a clear error outside an EngineProvider', () => {
    const silence = vi.spyOn(console, 'error').mockImplementation(() => {})
    expect(() => render(<Orphan />)).toThrow('useWindow must be used inside <EngineProvider')
    silence.mockRestore()
  })
})

describe('useWindows', () => {
  it('renders once per frame for changes inside its query, reads nothing for others, keeps unchanged rows', () => {
    const { engine, frame } = setup(<Rows query={{ window: MINUTE, key: 'temp' }} />)
    expect(text('rows')).toBe('')

    engine.emit(MINUTE, 'temp', 0, 1)
    engine.emit(MINUTE, 'temp', 60_000, 2)
    frame()
    expect(renders('rows')).toBe(2)
    expect(text('rows')).toBe('0:1 60000:2')

    const readsBefore = engine.reads.results
    engine.emit(HOUR, 'temp', 0, 3)
    engine.emit(MINUTE, 'humidity', 0, 4)
    frame()
    expect(renders('rows')).toBe(2)
    expect(engine.reads.results).toBe(readsBefore)

    const before = rendered.at(-1) as readonly WindowResult[]
    engine.emit(MINUTE, 'temp', 60_000, 5)
    frame()
    expect(renders('rows')).toBe(3)
    expect(text('rows')).toBe('0:1 60000:5')
    // The unchanged window keeps its object, so memoized rows skip rendering.
    const after = rendered.at(-1) as readonly WindowResult[]
    expect(after[0]).toBe(before[0])
    expect(after[1]).not.toBe(before[1])
  })

  it('with a selector, renders only when the selection changes', () => {
    const { engine, frame } = setup(<RowCount query={{ window: MINUTE }} />)
    engine.emit(MINUTE, 'a', 0, 1)
    frame()
    expect(text('count')).toBe('1')
    expect(renders('count')).toBe(2)

    engine.emit(MINUTE, 'a', 0, 2) // a correction: same number of windows
    frame()
    expect(renders('count')).toBe(2)

    engine.emit(MINUTE, 'b', 0, 1)
    frame()
    expect(renders('count')).toBe(3)
    expect(text('count')).toBe('2')
  })

  it('compares an inline selector shallowly by default', () => {
    const { engine, frame } = setup(<Sums />)
    engine.emit(MINUTE, 'a', 0, 1)
    frame()
    expect(renders('sums')).toBe(2)
    engine.emit(MINUTE, 'a', 0, 1) // a correction to the same sum
    frame()
    expect(renders('sums')).toBe(2)
    expect(text('sums')).toBe('1')
  })

  it('keeps the rendered selection when a parent re-renders with a new inline selector', () => {
    const engine = new FakeEngine()
    engine.emit(MINUTE, 'a', 0, 1)
    const { rerender } = setup(<Sums label="first:" />, engine)
    rerender(<Sums label="second:" />)
    expect(text('sums')).toBe('second:1')
    expect(rendered.length).toBeGreaterThanOrEqual(2)
    expect(rendered.at(-1)).toEqual([1])
    expect(rendered.at(-1)).toBe(rendered[0])
  })
})
