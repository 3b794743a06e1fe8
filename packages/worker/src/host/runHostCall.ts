import type { Engine } from '@tidemark/engine'
import type { HostCall } from '../protocol/messages.ts'
import type { HostContext, HostEngineOptions } from './hostOptions.ts'

const CALLS = 'a call is nextSeq, advance, tick, finish or command'

/**
 * Runs one call a page made (`nextSeq`, `advanceWatermark`, `tick`, `finishSource` or one of the
 * app's `commands`) on the hosted engine and returns what the page gets back: the engine's own
 * calls answer at once (a finish with the promise that it is durable), a command with whatever it
 * returns (a promise when it is async). An unknown
 * command throws a `RangeError` that lists the ones the host has, so a typo in a page's
 * `command(name)` is not silently ignored.
 *
 * @example
 * try {
 *   const value = await runHostCall(engine, context, options.commands, { op: 'command', name: 'reset', payload: null })
 *   link.send({ t: 'reply', req, value }, [])
 * } catch (error) {
 *   link.send({ t: 'reply', req, error: wireError(error) }, [])
 * }
 */
export function runHostCall(engine: Engine, context: HostContext, commands: HostEngineOptions['commands'], call: HostCall): unknown {
  // A page of this protocol always sends a call; a message without one is refused with the reason.
  if ((call as HostCall | null | undefined) == null) throw new RangeError(`unknown call (the message has no call): ${CALLS}`)
  switch (call.op) {
    case 'nextSeq':
      return engine.nextSeq(call.source)
    case 'advance':
      engine.advanceWatermark(call.to)
      return undefined
    case 'tick':
      engine.tick()
      return undefined
    case 'finish':
      return engine.finishSource(call.source)
    case 'command': {
      // Only the app's own commands: not what every object inherits ('toString', '__proto__', ...).
      const run = commands !== undefined && Object.hasOwn(commands, call.name) ? commands[call.name] : undefined
      if (typeof run !== 'function') throw new RangeError(`the host has no command '${call.name}' (hostEngine({ commands }) lists ${Object.keys(commands ?? {}).join(', ') || 'none'})`)
      return run(call.payload, context)
    }
    default:
      throw new RangeError(`unknown call ${String((call as { op?: unknown }).op)}: ${CALLS}`)
  }
}
