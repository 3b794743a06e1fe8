import { describe, expect, it } from 'vitest'
import { floorVersion, ownErrors, peerFloors } from '../peerFloor.ts'

describe('floorVersion', () => {
  it.each([
    ['>=18', '18.0.0'],
    ['>=4.5.3', '4.5.3'],
    ['^13.6.0', '13.6.0'],
    ['~1.2', '1.2.0'],
    ['1.0.7', '1.0.7'],
    ['>= 1.40', '1.40.0'],
  ])('%s starts at %s', (range, floor) => {
    expect(floorVersion(range)).toBe(floor)
  })

  it.each(['^17 || ^18', '>=18 <20', '1.x', '^2.0.0-beta.1', '*'])('refuses %s rather than guess its floor', (range) => {
    expect(() => floorVersion(range)).toThrow(/only >=X/)
  })
})

describe('peerFloors', () => {
  it('takes the highest floor of a peer two packages name, leaves siblings out and adds the types of React at its floor minor', () => {
    const floors = peerFloors([
      { name: '@tidemark/yjs', peerDependencies: { yjs: '^13.6.0', 'y-protocols': '^1.0.6' } },
      { name: '@tidemark/other', peerDependencies: { yjs: '^13.6.8', '@tidemark/yjs': '^0.0.0' } },
      { name: '@tidemark/react', peerDependencies: { react: '>=18', zustand: '>=4.5.3' } },
    ])
    expect(floors).toEqual({ yjs: '13.6.8', 'y-protocols': '1.0.6', react: '18.0.0', zustand: '4.5.3', '@types/react': '~18.0.0' })
  })
})

describe('ownErrors', () => {
  it("keeps the app's and @tidemark packages' errors with their continuation lines, and counts the others", () => {
    const output = [
      "src/app.tsx(27,6): error TS2786: 'EngineProvider' cannot be used as a JSX component.",
      "  Its return type 'ReactNode' is not a valid JSX element.",
      "node_modules/.pnpm/playwright-core@1.40.0/node_modules/playwright-core/types/protocol.d.ts(3,15): error TS1540: A 'namespace' declaration ...",
      '  a continuation of a foreign error',
      "node_modules/.pnpm/@tidemark+react@file+x/node_modules/@tidemark/react/dist/index.d.ts(1,1): error TS2307: Cannot find module 'react'.",
    ].join('\n')
    expect(ownErrors(output)).toEqual({
      own: [
        "src/app.tsx(27,6): error TS2786: 'EngineProvider' cannot be used as a JSX component.\n  Its return type 'ReactNode' is not a valid JSX element.",
        "node_modules/.pnpm/@tidemark+react@file+x/node_modules/@tidemark/react/dist/index.d.ts(1,1): error TS2307: Cannot find module 'react'.",
      ],
      foreign: 1,
    })
  })
})
