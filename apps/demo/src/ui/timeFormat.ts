// Formatting runs for every visible cell in every frame, so it avoids the
// Intl-backed toLocale* methods, which are slow enough to show in profiles.

const two = (n: number): string => (n < 10 ? `0${n}` : String(n))

/** Local wall-clock time of an epoch-ms instant, `14:03:07`. */
export function clockTime(ms: number): string {
  if (!Number.isFinite(ms)) return '—'
  const d = new Date(ms)
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`
}

/** `14:03:07.4`, for watermarks and event times where tenths matter. */
export function clockTimeTenths(ms: number): string {
  if (!Number.isFinite(ms)) return '—'
  return `${clockTime(ms)}.${Math.floor((((ms % 1000) + 1000) % 1000) / 100)}`
}

/** A duration, `850 ms`, `3.2 s`, `2 min`. */
export function duration(ms: number): string {
  if (!Number.isFinite(ms)) return '—'
  const abs = Math.abs(ms)
  if (abs < 1000) return `${Math.round(ms)} ms`
  if (abs < 60_000) return `${(ms / 1000).toFixed(abs < 10_000 ? 1 : 0)} s`
  return `${(ms / 60_000).toFixed(1)} min`
}

/** How long ago, `just now`, `4 s ago`. */
export function ago(at: number | null, now: number): string {
  if (at === null) return 'never'
  const ms = now - at
  if (ms < 1000) return 'just now'
  return `${duration(ms)} ago`
}

export function byteSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}

/** An integer with thousands separators, `12,345`. */
export function count(n: number): string {
  const digits = String(Math.round(Math.abs(n)))
  let out = ''
  for (let i = 0; i < digits.length; i++) {
    if (i > 0 && (digits.length - i) % 3 === 0) out += ','
    out += digits[i]
  }
  return n < 0 ? `-${out}` : out
}
