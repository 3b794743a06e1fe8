/**
 * A hand-written SVG bar chart of the headline ratios, one row per profile: Tidemark's share of
 * the plain-loop floor on the left, its speed-up over RxJS on the right, min–max whiskers and the
 * issue's targets as dashed lines. No dependencies; the output is a few kB.
 */
import type { ProfileFigures, RatioFigures } from './profile.ts'

const ROW = 26
const LABEL = 230
const PANEL = 300
const GAP = 40
const TOP = 58
const WIDTH = LABEL + 2 * PANEL + GAP + 20

interface Panel {
  readonly x: number
  readonly title: string
  readonly ratio: string
  readonly max: number
  readonly target: number
  readonly ticks: readonly number[]
  readonly format: (v: number) => string
  readonly color: string
}

export function ratioChart(results: readonly ProfileFigures[]): string {
  const height = TOP + results.length * ROW + 34
  const maxTimes = Math.max(25, ...results.map((f) => find(f, 'engine-vs-rxjs')?.max ?? 0))
  const panels: Panel[] = [
    {
      x: LABEL,
      title: 'Tidemark throughput, % of plain-loop floor',
      ratio: 'engine/floor',
      max: 1,
      target: 0.25,
      ticks: [0, 0.25, 0.5, 0.75, 1],
      format: (v) => `${Math.round(v * 100)}%`,
      color: '#2b6cb0',
    },
    {
      x: LABEL + PANEL + GAP,
      title: 'Tidemark speed-up over RxJS 7 (×)',
      ratio: 'engine-vs-rxjs',
      max: niceCeiling(maxTimes),
      target: 20,
      ticks: ticksFor(niceCeiling(maxTimes)),
      format: (v) => `${v}×`,
      color: '#2f855a',
    },
  ]
  const parts: string[] = []
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="#fff"/>`,
    `<text x="10" y="18" font-size="14" font-weight="600">Tidemark vs plain-loop floor and RxJS (median, min–max whiskers; dashed: issue targets)</text>`,
  )
  const bottom = TOP + results.length * ROW
  for (const p of panels) {
    parts.push(`<text x="${p.x}" y="${TOP - 22}" font-weight="600">${escapeXml(p.title)}</text>`)
    for (const t of p.ticks) {
      const x = p.x + scale(t, p.max)
      parts.push(`<line x1="${x}" y1="${TOP - 6}" x2="${x}" y2="${bottom}" stroke="#e2e8f0"/>`)
      parts.push(`<text x="${x}" y="${bottom + 16}" text-anchor="middle" fill="#4a5568">${p.format(t)}</text>`)
    }
    const tx = p.x + scale(p.target, p.max)
    parts.push(`<line x1="${tx}" y1="${TOP - 10}" x2="${tx}" y2="${bottom}" stroke="#c53030" stroke-dasharray="4 3"/>`)
  }
  results.forEach((f, i) => {
    const y = TOP + i * ROW
    parts.push(`<text x="10" y="${y + 16}">${escapeXml(f.profile)}</text>`)
    for (const p of panels) {
      const r = find(f, p.ratio)
      if (r === undefined) {
        parts.push(`<text x="${p.x + 4}" y="${y + 16}" fill="#a0aec0">n/a</text>`)
        continue
      }
      const w = scale(r.median, p.max)
      parts.push(`<rect x="${p.x}" y="${y + 5}" width="${w.toFixed(1)}" height="${ROW - 10}" fill="${p.color}" opacity="0.85"/>`)
      const x1 = p.x + scale(r.min, p.max)
      const x2 = p.x + scale(r.max, p.max)
      parts.push(`<line x1="${x1.toFixed(1)}" y1="${y + ROW / 2}" x2="${x2.toFixed(1)}" y2="${y + ROW / 2}" stroke="#1a202c"/>`)
      const label = p.ratio === 'engine/floor' ? `${(r.median * 100).toFixed(0)}%` : `${r.median.toFixed(1)}×`
      parts.push(`<text x="${(p.x + Math.max(w, scale(r.max, p.max)) + 4).toFixed(1)}" y="${y + 17}" fill="#1a202c">${label}</text>`)
    }
  })
  parts.push('</svg>')
  return `${parts.join('\n')}\n`
}

function find(f: ProfileFigures, name: string): RatioFigures | undefined {
  return f.ratios.find((r) => r.name === name)
}

function scale(v: number, max: number): number {
  return (Math.min(Math.max(v, 0), max) / max) * (PANEL - 50)
}

function niceCeiling(v: number): number {
  for (const step of [25, 50, 100, 200, 500, 1000]) if (v <= step) return step
  return Math.ceil(v / 1000) * 1000
}

function ticksFor(max: number): number[] {
  return [0, 0.2, 0.4, 0.6, 0.8, 1].map((f) => Math.round(max * f))
}

function escapeXml(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')
}
