/** FNV-1a over event ids in emission order: equal checksums mean the same events in the same order. */
export const CHECKSUM_SEED = 2166136261

export function hashId(h: number, id: string): number {
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619)
  return h >>> 0
}
