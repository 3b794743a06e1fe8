import { resolve } from 'node:path'
import { rolldown } from 'rolldown'
const b = await rolldown({ input: resolve('packages/engine/dist/index.js'), platform: 'browser', logLevel: 'silent' })
const { output } = await b.generate({ format: 'esm', minify: true })
for (const c of output) if (c.type === 'chunk') {
  const rows = Object.entries(c.modules).map(([id, m]) => [m.renderedLength, id.replace(/.*dist\//, '')] as const).sort((a, b) => a[0] - b[0])
  let t = 0
  for (const r of rows) { t += r[0]; console.log(r.join('\t')) }
  console.log('total rendered', t, 'code', c.code.length)
}
