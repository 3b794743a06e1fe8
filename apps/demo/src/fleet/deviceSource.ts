import type { ClockEntry } from '@tidemark/engine'

/** Separates a device's id from the number of a later source of it (`d07~2`). */
const LATER_SOURCE_MARK = '~'

/** The source a device writes next, and the last seq it used in it (0 for a new source). */
export interface DeviceSource {
  readonly source: string
  readonly lastSeq: number
}

/**
 * The source device `device` writes, from the clocks its log recovered: its id (`d07`) at first,
 * and after that the latest source of it, unless that one is finished. A device that left the
 * fleet finished its source (`engine.finishSource`: nothing more comes from it, so no engine
 * waits for it), and a finished source takes no more readings; the same slot started again in
 * the same epoch (the fleet grew back, or a `?device=` tab kept it open) is a new run of the
 * device, writing the next source (`d07~2`, `d07~3`, …) from seq 1. The log, its replica and the
 * room stay the device's.
 *
 * @example
 * nextDeviceSource([], 'd07') // { source: 'd07', lastSeq: 0 }
 * nextDeviceSource([{ source: 'd07', writer: 'r1', maxTs: 9, prefix: 42, prefixTs: 9, provable: true, version: 3 }], 'd07') // { source: 'd07', lastSeq: 42 }
 * nextDeviceSource([{ source: 'd07', writer: 'r1', maxTs: 9, prefix: 42, prefixTs: 9, provable: true, finished: true, version: 4 }], 'd07') // { source: 'd07~2', lastSeq: 0 }
 */
export function nextDeviceSource(clocks: readonly ClockEntry[], device: string): DeviceSource {
  let latest: ClockEntry | undefined
  let latestRun = 0
  for (const clock of clocks) {
    const run = runOf(clock.source, device)
    if (run > latestRun) {
      latest = clock
      latestRun = run
    }
  }
  if (latest === undefined) return { source: device, lastSeq: 0 }
  if (latest.finished !== true) return { source: latest.source, lastSeq: latest.prefix }
  return { source: `${device}${LATER_SOURCE_MARK}${latestRun + 1}`, lastSeq: 0 }
}

/**
 * The device a source is of: `d07` for `d07` and `d07~2`. The devices-reporting aggregate counts
 * devices by it, so a window holding the last readings of one run and the first of the next
 * counts the device once.
 *
 * @example
 * deviceOfSource('d07~2') // 'd07'
 */
export function deviceOfSource(source: string): string {
  const at = source.indexOf(LATER_SOURCE_MARK)
  return at < 0 ? source : source.slice(0, at)
}

/**
 * The sources a device's relay token grants: its id and every later source of it (a prefix
 * pattern). A host's fresh document carries every source its log holds, the finished ones too.
 *
 * @example
 * deviceSourceGrant('d07') // ['d07', 'd07~*']
 */
export function deviceSourceGrant(device: string): string[] {
  return [device, `${device}${LATER_SOURCE_MARK}*`]
}

/** 1 for the device's first source, n for `<device>~n` (n ≥ 2), 0 for a source of another device. */
function runOf(source: string, device: string): number {
  if (source === device) return 1
  if (!source.startsWith(`${device}${LATER_SOURCE_MARK}`)) return 0
  const run = Number(source.slice(device.length + 1))
  return Number.isSafeInteger(run) && run >= 2 ? run : 0
}
