/**
 * `@tidemark/engine/ordered`: events in order rather than aggregated. `orderEvents` orders one
 * complete batch; `createOrderedStream` releases a stream in order as the watermark passes it,
 * with corrections for what arrives late (docs/semantics.md, The ordered event stream). Its own
 * entry, so an app that only needs windows does not download it.
 *
 * @module @tidemark/engine/ordered
 */
export { compareEventOrder } from './ordered/eventOrder.ts'
export { orderEvents } from './ordered/orderEvents.ts'
export { createOrderedStream, OrderedEventStream } from './ordered/orderedStream.ts'

export type { OrderedEvent } from './ordered/eventOrder.ts'
export type { OrderedEvents, OrderEventsOptions } from './ordered/orderEvents.ts'
export type {
  OrderedBatch,
  OrderedStream,
  OrderedStreamOptions,
  OrderedStreamStats,
  OrderedStreamWork,
} from './ordered/orderedStreamApi.ts'
