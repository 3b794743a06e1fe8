/** How the engine knows a window is complete (docs/semantics.md, Basis). */
export type Basis = 'proven' | 'derived' | 'fallback' | 'unknown'
