/**
 * The bench's host worker (the app's worker file of @tidemark/worker): the engine over an
 * IndexedDB log, and commands that run the load inside the worker, where a socket would bring it.
 */
import { hostEngine } from '@tidemark/worker/host'
import { BENCH_NAME, fill, type Simulation, scenarioEngine, simulate } from './fleetLoad.ts'

hostEngine({
  name: BENCH_NAME,
  engine: (config) => scenarioEngine((config as { scenario: string }).scenario),
  commands: {
    simulate: (simulation, { engine }) => simulate((events) => engine.ingest(events), simulation as Simulation),
    fill: (devices, { engine }) => fill((events) => engine.ingest(events), devices as number),
  },
})
