/**
 * A constructor of plain objects from `make`, which assigns the fields (`this.x = x`) in the order
 * the objects list them. The constructed objects have `Object.prototype` as their prototype, as
 * object literals do: their keys, JSON, structured clone and deep equality are a literal's.
 *
 * Why not a literal: V8 tracks where each object literal is made, and once most objects from a
 * literal survive a young-generation collection, it allocates all later objects of that literal
 * in the old generation. There, making one costs about ten times as much (measured: 33,400
 * cell-shaped objects kept across rounds, 14.6 ms a round from a literal, 1.3 ms from such a
 * constructor). An object made by `new` has no such site. Objects the engine keeps long (cells,
 * late-lane entries, events waiting in order) are made this way; each kind by a constructor of its
 * own, so that each keeps its own hidden class.
 *
 * @example
 * const Point = plainConstructor(function (this: { x: number; y: number }, x: number, y: number) {
 *   this.x = x
 *   this.y = y
 * })
 * new Point(1, 2) // { x: 1, y: 2 }, a plain object
 */
export function plainConstructor<T, A extends unknown[]>(make: (this: T, ...args: A) => void): new (...args: A) => T {
  make.prototype = Object.prototype
  return make as unknown as new (...args: A) => T
}
