import { describe, expect, it } from 'vitest'
import { createEngine, isOverflowError, tumbling } from '@tidemark/engine'
import type { HostContext } from '../src/host/hostOptions.ts'
import { runHostCall } from '../src/host/runHostCall.ts'
import { HostCalls, MAX_PENDING_CALLS } from '../src/page/hostCalls.ts'
import type { HostLink } from '../src/page/hostLink.ts'
import type { HostCall, PageMessage } from '../src/protocol/messages.ts'

/** A link that keeps what it was sent. */
function link(): HostLink & { readonly sent: { req: number; call: HostCall }[] } {
  const sent: { req: number; call: HostCall }[] = []
  return {
    sent,
    send: (message: PageMessage) => {
      if (message.t === 'call') sent.push({ req: message.req, call: message.call })
    },
    close: () => {},
  }
}

describe('host calls while no host serves the page', () => {
  it('merge waiting ticks into one and waiting advances into one to the highest time; every caller is answered', async () => {
    const calls = new HostCalls()
    const answers = [
      calls.add({ op: 'advance', to: 100 }, true, null),
      calls.add({ op: 'tick' }, true, null),
      calls.add({ op: 'advance', to: 300 }, true, null),
      calls.add({ op: 'tick' }, true, null),
      calls.add({ op: 'advance', to: 200 }, true, null),
      calls.add({ op: 'nextSeq', source: 'd1' }, true, null),
    ]
    for (let i = 0; i < 1_000; i++) answers.push(calls.add({ op: 'tick' }, true, null))
    expect(calls.pending).toBe(3)
    const host = link()
    calls.sendWaiting(host)
    expect(host.sent.map(({ call }) => call)).toEqual([{ op: 'advance', to: 300 }, { op: 'tick' }, { op: 'nextSeq', source: 'd1' }])
    for (const { req, call } of host.sent) calls.reply(req, call.op === 'nextSeq' ? 7 : undefined, undefined, false)
    const values = await Promise.all(answers)
    expect([values.length, values[5], values.filter((v) => v === undefined).length, calls.pending]).toEqual([1_006, 7, 1_005, 0])
  })

  it('merge a call sent again after its host went away with the ones made since', async () => {
    const calls = new HostCalls()
    const first = link()
    const a = calls.add({ op: 'advance', to: 500 }, true, first)
    calls.hostLost('the host stopped')
    const b = calls.add({ op: 'advance', to: 900 }, true, null)
    expect(calls.pending).toBe(1)
    const next = link()
    calls.sendWaiting(next)
    expect(next.sent.map(({ call }) => call)).toEqual([{ op: 'advance', to: 900 }])
    calls.reply(next.sent[0]?.req as number, undefined, undefined, false)
    expect(await Promise.all([a, b])).toEqual([undefined, undefined])
  })

  it(`refuse at once past ${MAX_PENDING_CALLS} waiting calls with an OverflowError saying why; ticks still merge`, async () => {
    const calls = new HostCalls()
    const tick = calls.add({ op: 'tick' }, true, null)
    const waiting: Promise<unknown>[] = []
    for (let i = 1; i < MAX_PENDING_CALLS; i++) waiting.push(calls.add({ op: 'nextSeq', source: `d${i}` }, true, null).catch(String))
    const refused = await calls.add({ op: 'command', name: 'peers', payload: null }, false, null).then(
      () => null,
      (error: unknown) => error,
    )
    expect(isOverflowError(refused)).toBe(true)
    expect((refused as Error).message).toBe(
      `worker host calls is full: ${MAX_PENDING_CALLS} calls wait on this page for the engine's host (MAX_PENDING_CALLS); await earlier calls before making more`,
    )
    const merged = calls.add({ op: 'tick' }, true, null)
    expect(calls.pending).toBe(MAX_PENDING_CALLS)
    calls.rejectAll(new Error('the remote engine is closed'))
    await expect(tick).rejects.toThrow('the remote engine is closed')
    await expect(merged).rejects.toThrow('the remote engine is closed')
    expect(new Set(await Promise.all(waiting))).toEqual(new Set(['Error: the remote engine is closed']))
  })
})

describe('a call the host cannot read', () => {
  it('is refused with the reason, whatever the message holds', () => {
    const engine = createEngine({ windows: tumbling(1_000) })
    const run = (call: unknown) => () => runHostCall(engine, {} as HostContext, undefined, call as HostCall)
    expect(run(undefined)).toThrow('unknown call (the message has no call): a call is nextSeq, advance, tick, finish or command')
    expect(run(null)).toThrow('unknown call (the message has no call)')
    expect(run({ op: 'drop' })).toThrow('unknown call drop: a call is nextSeq, advance, tick, finish or command')
    expect(run({ op: 'command', name: 'reset' })).toThrow("the host has no command 'reset' (hostEngine({ commands }) lists none)")
    expect(run({ op: 'nextSeq', source: 'd1' })()).toBe(1)
  })
})
