// @vitest-environment happy-dom
import { act, createElement } from 'react'
import { createRoot } from 'react-dom/client'
import { afterEach, describe, expect, it } from 'vitest'
import { ChartPlot, type ChartPlotProps } from '../src/ui/ChartPlot.tsx'
import type { FleetResult } from '../src/ui/chartMeasure.ts'
import type { ChartWindow } from '../src/ui/chartWindows.ts'

;(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true

const WINDOW_MS = 2_000
const FIRST = 100_000

function windowAt(start: number, value: number): ChartWindow {
  const result = { window: 'tumbling:2000', key: 'temp', start, end: start + WINDOW_MS, revision: 0, status: 'proven', final: false, count: 10, mean: value } as unknown as FleetResult
  return { result, value, onTimeValue: null }
}

let cleanup: (() => void) | null = null
afterEach(() => {
  cleanup?.()
  cleanup = null
})

/** Renders a chart of 20 slots with windows in the first five, `width` px wide; `hovered` follows onHover as WindowChart's state does. */
function renderChart(width = 600): { svg: HTMLElement; hovered: () => number | null } {
  const container = document.createElement('div')
  document.body.append(container)
  const root = createRoot(container)
  let hovered: number | null = null
  const props = (): ChartPlotProps => ({
    label: 'Temperature, mean °C',
    windows: [0, 1, 2, 3, 4].map((i) => windowAt(FIRST + i * WINDOW_MS, 20 + i)),
    axisStep: 0,
    firstStart: FIRST,
    windowMs: WINDOW_MS,
    slots: 20,
    width,
    height: 184,
    watermark: FIRST + 8_000,
    firingFrontier: FIRST + 8_000,
    allowedLatenessMs: 4_000,
    afterFinalMarks: [],
    hoveredStart: hovered,
    onHover: (start) => {
      hovered = start
      root.render(createElement(ChartPlot, props()))
    },
  })
  act(() => root.render(createElement(ChartPlot, props())))
  cleanup = () => {
    act(() => root.unmount())
    container.remove()
  }
  return { svg: container.querySelector('[role="slider"]') as HTMLElement, hovered: () => hovered }
}

const press = (svg: HTMLElement, key: string): void => {
  act(() => {
    svg.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true }))
  })
}

describe('ChartPlot from the keyboard', () => {
  it('is a named, focusable chart whose windows the arrow keys step through, as hovering does', () => {
    const { svg, hovered } = renderChart()
    expect(svg.getAttribute('aria-label')).toContain('Temperature, mean °C')
    expect(svg.getAttribute('tabindex')).toBe('0')
    // The chart is one slider over its windows: its value says which window is shown.
    expect(svg.getAttribute('aria-valuemax')).toBe('19')
    // Focus shows the latest window with a value, as the pointer would.
    act(() => svg.focus())
    expect(hovered()).toBe(FIRST + 4 * WINDOW_MS)
    press(svg, 'ArrowLeft')
    expect(hovered()).toBe(FIRST + 3 * WINDOW_MS)
    expect(svg.getAttribute('aria-valuenow')).toBe('3')
    press(svg, 'Home')
    expect(hovered()).toBe(FIRST)
    press(svg, 'ArrowLeft')
    expect(hovered()).toBe(FIRST)
    press(svg, 'End')
    expect(hovered()).toBe(FIRST + 4 * WINDOW_MS)
    press(svg, 'ArrowRight')
    expect(hovered()).toBe(FIRST + 5 * WINDOW_MS)
    press(svg, 'Escape')
    expect(hovered()).toBe(null)
    press(svg, 'ArrowRight')
    expect(hovered()).toBe(FIRST + 4 * WINDOW_MS)
    act(() => svg.blur())
    expect(hovered()).toBe(null)
  })
})

describe('ChartPlot at any width', () => {
  // A chart body measures 0 px while its panel is laid out or hidden (ResizeObserver says so):
  // Chromium reports every negative width or radius as a console error.
  it.each([0, 30, 56, 600])('draws no negative size at %i px, hovered or not', (width) => {
    const { svg } = renderChart(width)
    act(() => svg.focus())
    const sizes = [...svg.querySelectorAll('rect, circle')].flatMap((mark) =>
      ['width', 'height', 'r'].map((name) => mark.getAttribute(name)).filter((value) => value !== null),
    )
    expect(sizes.length).toBeGreaterThan(0)
    expect(sizes.map(Number).filter((size) => !(size >= 0))).toEqual([])
  })
})
