/**
 * Summarises a CPU profile of the render-1000-windows page: self time per
 * owner (the production build puts the engine, the bindings, React and the
 * page in chunks of their own) and the hottest functions. Runs in Node.
 */

import type { Profiler, Runtime } from 'node:inspector'

/** The owner of a script URL: its chunk name, or what V8 calls it (`(garbage collector)`, `(program)`, …). */
function ownerOf(frame: Runtime.CallFrame): string {
  if (frame.url === '') return frame.functionName.startsWith('(') ? frame.functionName : '(native)'
  const file = frame.url.split('/').pop() ?? frame.url
  const chunk = /^([a-z]+)-[\w-]+\.js$/.exec(file)?.[1]
  return chunk === 'index' ? 'page' : (chunk ?? file)
}

export function summarizeProfile(profile: Profiler.Profile, top = 25): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const byOwner = new Map<string, number>()
  const byFunction = new Map<string, number>()
  const samples = profile.samples ?? []
  let total = 0
  for (let i = 0; i < samples.length; i++) {
    const node = byId.get(samples[i] as number)
    const dt = profile.timeDeltas?.[i] ?? 0
    if (node === undefined) continue
    total += dt
    const owner = ownerOf(node.callFrame)
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + dt)
    const fn = `${node.callFrame.functionName || '(anonymous)'}  [${owner}:${node.callFrame.lineNumber + 1}]`
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + dt)
  }
  const ms = (us: number): string => (us / 1000).toFixed(1).padStart(8)
  const share = (us: number): string => `${((us / total) * 100).toFixed(1).padStart(5)}%`
  const lines = [`CPU profile: ${(total / 1000).toFixed(0)} ms sampled`, 'Self time by owner:']
  for (const [owner, us] of [...byOwner].sort((a, b) => b[1] - a[1])) lines.push(`${ms(us)} ${share(us)}  ${owner}`)
  lines.push('Top functions by self time:')
  for (const [fn, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`${ms(us)} ${share(us)}  ${fn}`)
  return lines.join('\n')
}
