import type { WindowResult } from '@tidemark/engine'
import type { ReactNode } from 'react'

/** What a window's badge says: its basis once fired, `provisional` before. */
export type BadgeKind = 'proven' | 'derived' | 'fallback' | 'provisional' | 'unknown'

export function badgeKindOf(result: WindowResult): BadgeKind {
  return result.status === 'provisional' ? 'provisional' : result.basis
}

export const BADGE_HINTS: Readonly<Record<BadgeKind, string>> = {
  proven: 'Proven: every device delivered a gap-free seq past the window end',
  derived: 'Derived: the watermark passed the window end',
  fallback: 'Fallback: the watermark passed only because a silent device was left out',
  provisional: 'Provisional: still open, readings may arrive on time',
  unknown: 'Not known to be complete',
}

export const LEGEND_KINDS: readonly BadgeKind[] = ['proven', 'derived', 'fallback', 'provisional']

export function BasisBadge({ kind }: { readonly kind: BadgeKind }): ReactNode {
  return (
    <span className={`badge badge-${kind}`} title={BADGE_HINTS[kind]}>
      {kind}
    </span>
  )
}
