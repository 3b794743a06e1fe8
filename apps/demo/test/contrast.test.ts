import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

const css = readFileSync(new URL('../src/styles.css', import.meta.url), 'utf8')

/** The `--name: #rrggbb` custom properties of `:root`. */
function rootColors(): Map<string, string> {
  const root = /:root\s*\{([^}]*)\}/.exec(css)?.[1] ?? ''
  return new Map([...root.matchAll(/--([\w-]+):\s*(#[0-9a-fA-F]{6})\s*;/g)].map((m) => [m[1] as string, m[2] as string]))
}

function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
  }) as [number, number, number]
  return 0.2126 * r + 0.7152 * g + 0.0722 * b
}

/** WCAG 2 contrast ratio of two colours. */
function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number]
  return (hi + 0.05) / (lo + 0.05)
}

describe('text contrast (WCAG AA, 4.5:1 for text under 18 px)', () => {
  const colors = rootColors()
  const backgrounds = ['bg', 'panel', 'panel-2']

  it.each([
    // --faint carries status notes (the Relay tile's "12 rooms followed", the watermark's "3.1 s behind now",
    // "held back by a device"), the chart axes, the control and panel hints; --muted the labels and most values.
    'faint',
    'muted',
    'text',
    // The status tones, as the stat values, pills and chart marks write them.
    'good',
    'warn',
    'bad',
    'proven',
    'derived',
    'fallback',
    'correction',
  ])('--%s is readable on every panel background', (name) => {
    const color = colors.get(name)
    expect(color, `--${name} in :root`).toBeDefined()
    for (const background of backgrounds) {
      const ratio = contrast(color as string, colors.get(background) as string)
      expect(ratio, `--${name} on --${background}: ${ratio.toFixed(2)}:1`).toBeGreaterThanOrEqual(4.5)
    }
  })
})
