import { describe, expect, it } from 'vitest'
import { WindowList } from '../src/windows/windowList.ts'
import { WindowState } from '../src/windows/windowState.ts'

describe('WindowList', () => {
  it('holds the windows added since it was last cleared, in order, and starts over after clear', () => {
    const list = new WindowList()
    const windows = [0, 1, 2].map((i) => new WindowState('tumbling:60000', 'k', i * 60_000, (i + 1) * 60_000))
    for (const w of windows) list.add(w)
    expect(list.size).toBe(3)
    expect([0, 1, 2].map((i) => list.at(i))).toEqual(windows)
    list.clear()
    expect(list.size).toBe(0)
    list.add(windows[2] as WindowState)
    expect(list.size).toBe(1)
    expect(list.at(0)).toBe(windows[2])
  })
})
