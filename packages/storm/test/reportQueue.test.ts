import { afterEach, describe, expect, it, vi } from 'vitest'
import type { StormBatchReport } from '../src/contract/stormPageApi.ts'
import { ReportQueue } from '../src/page/reportQueue.ts'

const report = (from: number): StormBatchReport => ({ source: 'd1', from, to: from, accepted: 1, beyondLateness: 0, duplicates: 0, rejected: 0 })

/** A sink whose sends stay in flight until the test lets them land. */
function heldSink() {
  const sends: { reports: readonly StormBatchReport[]; land: () => void; fail: (error: Error) => void }[] = []
  const sink = (reports: readonly StormBatchReport[]) =>
    new Promise<void>((land, fail) => {
      sends.push({ reports, land, fail })
    })
  /** The `index`th send, which the test expects to have started. */
  const send = (index: number) => {
    const started = sends[index]
    if (started === undefined) throw new Error(`send ${index} never started (${sends.length} did)`)
    return started
  }
  return { sink, sends, send }
}

async function settled(promise: Promise<void>): Promise<boolean> {
  let done = false
  promise.then(() => (done = true), () => (done = true))
  await vi.advanceTimersByTimeAsync(0)
  return done
}

describe('ReportQueue', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('sends what waited everyMs as one call', async () => {
    vi.useFakeTimers()
    const { sink, sends } = heldSink()
    const queue = new ReportQueue(sink, 250, (message) => expect.fail(message))
    queue.add(report(1))
    queue.add(report(2))
    await vi.advanceTimersByTimeAsync(249)
    expect(sends).toHaveLength(0)
    await vi.advanceTimersByTimeAsync(1)
    expect(sends.map((send) => send.reports.map((r) => r.from))).toEqual([[1, 2]])
  })

  it('flush waits for a send the timer started, even with nothing queued', async () => {
    vi.useFakeTimers()
    const { sink, sends, send } = heldSink()
    const queue = new ReportQueue(sink, 250, (message) => expect.fail(message))
    queue.add(report(1))
    await vi.advanceTimersByTimeAsync(250)
    expect(sends).toHaveLength(1)
    const flushed = queue.flush()
    expect(await settled(flushed)).toBe(false)
    send(0).land()
    expect(await settled(flushed)).toBe(true)
  })

  it('flush sends its own reports at once and resolves after both sends land', async () => {
    vi.useFakeTimers()
    const { sink, sends, send } = heldSink()
    const queue = new ReportQueue(sink, 250, (message) => expect.fail(message))
    queue.add(report(1))
    await vi.advanceTimersByTimeAsync(250)
    queue.add(report(2))
    const flushed = queue.flush()
    expect(sends.map((send) => send.reports.map((r) => r.from))).toEqual([[1], [2]])
    send(1).land()
    expect(await settled(flushed)).toBe(false)
    send(0).land()
    expect(await settled(flushed)).toBe(true)
  })

  it("a timer's failed send goes to onError once; a later flush still resolves", async () => {
    vi.useFakeTimers()
    const { sink, send } = heldSink()
    const errors: string[] = []
    const queue = new ReportQueue(sink, 250, (message) => errors.push(message))
    queue.add(report(1))
    await vi.advanceTimersByTimeAsync(250)
    const flushed = queue.flush()
    send(0).fail(new Error('binding gone'))
    await expect(flushed).resolves.toBeUndefined()
    expect(errors).toEqual(['report: binding gone'])
  })

  it("flush rejects when its own send fails", async () => {
    vi.useFakeTimers()
    const { sink, send } = heldSink()
    const queue = new ReportQueue(sink, 250, (message) => expect.fail(message))
    queue.add(report(1))
    const flushed = queue.flush()
    send(0).fail(new Error('binding gone'))
    await expect(flushed).rejects.toThrow('binding gone')
  })
})
