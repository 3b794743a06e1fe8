import { cleanup } from '@testing-library/react'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { renders, resetProbes, Rows, Sum, setup, text } from './probes.tsx'
import { MINUTE } from './windowIds.ts'

beforeEach(resetProbes)
afterEach(cleanup)

/** `a`, and from a later commit on (`later`), `b` and `rows` beside it; `a` stays mounted throughout. */
const Hooks = ({ later = false }: { later?: boolean }) => (
  <>
    <Sum name="a" />
    {later && <Sum name="b" />}
    {later && <Rows query={{ window: MINUTE }} />}
  </>
)

describe('a hook mounted after the engine changed, before the next frame', () => {
  it('renders no state older than the hooks mounted before it, and misses no change', () => {
    const { engine, frame, rerender } = setup(<Hooks />)
    engine.emit(MINUTE, 'temp', 0, 1)
    frame()
    expect(text('a')).toBe('1')

    engine.emit(MINUTE, 'temp', 0, 2) // the frame that shows it has not run
    rerender(<Hooks later />)
    // One commit: `a` shows the last frame until the next one, the new hooks the engine as it is
    // now (they read it when made): ahead of `a` for at most a frame, never behind it.
    expect(text('a')).toBe('1')
    expect(text('b')).toBe('2')
    expect(text('rows')).toBe('0:2')

    const mounted = renders('b')
    frame()
    expect([text('a'), text('b'), text('rows')]).toEqual(['2', '2', '0:2'])
    expect(renders('b')).toBe(mounted) // the frame had nothing new for it

    engine.emit(MINUTE, 'temp', 0, 3)
    frame()
    expect([text('a'), text('b'), text('rows')]).toEqual(['3', '3', '0:3'])
  })

  it('sees a change made after it mounted that the same frame carries', () => {
    const { engine, frame, rerender } = setup(<Hooks />)
    engine.emit(MINUTE, 'temp', 0, 1) // pending
    rerender(<Hooks later />)
    engine.emit(MINUTE, 'temp', 0, 2) // same frame, after `b` and `rows` read the engine
    frame()
    expect([text('a'), text('b'), text('rows')]).toEqual(['2', '2', '0:2'])
  })
})
