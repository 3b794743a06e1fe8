/**
 * Seeded exploratory fuzz campaigns (packages/testkit/README.md).
 *
 *   pnpm fuzz --seed N --seconds S [--scenario NAME]   run campaigns (S split across scenarios)
 *   pnpm fuzz --seed N --scenario NAME --iteration I    re-run one iteration (a repro)
 *   pnpm fuzz --replay FILE                             run a saved (shrunk) case
 *   pnpm fuzz --list                                    list scenarios
 *
 * Options: --iterations K (a fixed budget instead of time), --shrink-seconds T (default 60),
 * --quiet (no progress line), --avoid-known-bugs (take the triggers of reported engine bugs
 * out of generated cases, as the release gate does). Exits 1 when an invariant broke, 2 on bad arguments.
 */
import { inspect } from 'node:util'
import { type CampaignFailure, type CampaignProgress, type CampaignResult, breaks, runCampaign } from './campaign.ts'
import { readCaseFile, writeCaseFile } from './caseFile.ts'
import { invariantOf } from './invariant.ts'
import { SCENARIOS, scenarioNamed } from './scenarios/index.ts'

interface Args {
  seed: number
  seconds: number | undefined
  iterations: number | undefined
  iteration: number | undefined
  scenario: string | undefined
  replay: string | undefined
  shrinkSeconds: number
  quiet: boolean
  list: boolean
  avoidKnownBugs: boolean
}

function usage(message: string): never {
  console.error(`fuzz: ${message}\nusage: pnpm fuzz --seed N --seconds S [--scenario NAME] | --iteration I | --replay FILE | --list`)
  process.exit(2)
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = {
    seed: Date.now() % 1_000_000,
    seconds: undefined,
    iterations: undefined,
    iteration: undefined,
    scenario: undefined,
    replay: undefined,
    shrinkSeconds: 60,
    quiet: false,
    list: false,
    avoidKnownBugs: false,
  }
  const number = (flag: string, text: string | undefined): number => {
    const n = Number(text)
    if (text === undefined || !Number.isFinite(n)) usage(`${flag} needs a number`)
    return n
  }
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i] as string
    const [name, inline] = flag.includes('=') ? (flag.split('=', 2) as [string, string]) : [flag, undefined]
    const value = () => inline ?? argv[++i]
    switch (name) {
      case '--':
        break
      case '--seed':
        args.seed = Math.trunc(number(name, value()))
        break
      case '--seconds':
        args.seconds = number(name, value())
        break
      case '--iterations':
        args.iterations = Math.trunc(number(name, value()))
        break
      case '--iteration':
        args.iteration = Math.trunc(number(name, value()))
        break
      case '--scenario':
        args.scenario = value()
        break
      case '--replay':
        args.replay = value()
        break
      case '--shrink-seconds':
        args.shrinkSeconds = number(name, value())
        break
      case '--quiet':
        args.quiet = true
        break
      case '--list':
        args.list = true
        break
      case '--avoid-known-bugs':
        args.avoidKnownBugs = true
        break
      default:
        usage(`unknown argument ${flag}`)
    }
  }
  return args
}

const fmt = (n: number) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : n >= 1e4 ? `${(n / 1e3).toFixed(1)}k` : String(n))

function progressLine(p: CampaignProgress): string {
  const budget = p.budgetMs === null ? '' : `/${(p.budgetMs / 1000).toFixed(0)}s`
  return `  ${p.scenario.padEnd(34)} iterations ${fmt(p.iterations).padStart(6)}  ops ${fmt(p.meter.ops).padStart(7)}  events ${fmt(p.meter.events).padStart(7)}  checks ${fmt(p.meter.checks).padStart(7)}  ${(p.elapsedMs / 1000).toFixed(1)}s${budget}`
}

function reproCommands(f: CampaignFailure, file: string, avoid: boolean): string[] {
  return [
    `pnpm fuzz --seed ${f.seed} --scenario ${f.scenario} --iteration ${f.iteration}${avoid ? ' --avoid-known-bugs' : ''}`,
    `pnpm fuzz --replay ${file}`,
  ]
}

function reportFailure(f: CampaignFailure, avoid: boolean): void {
  const file = writeCaseFile({
    scenario: f.scenario,
    seed: f.seed,
    iteration: f.iteration,
    invariant: f.invariant,
    message: f.message,
    testCase: f.shrunk,
  })
  const shrunk = inspect(f.shrunk, { depth: 6, breakLength: 160, maxArrayLength: 60 })
  console.error(
    [
      '',
      `FAILED ${f.scenario}: invariant ${f.invariant}`,
      `  seed ${f.seed}, iteration ${f.iteration} (fast-check seed ${f.iterationSeed})`,
      `  original: ${f.originalSummary}`,
      `  shrunk (${f.shrinkAttempts} attempts${f.shrinkComplete ? '' : ', shrink budget ran out'}): ${f.shrunkSummary}`,
      `  ${f.message}`,
      '  minimal repro case:',
      shrunk.length > 8000 ? `${shrunk.slice(0, 8000)}\n  … (full case in the file below)` : shrunk,
      `  saved: ${file}`,
      '  repro:',
      ...reproCommands(f, file, avoid).map((c) => `    ${c}`),
      '',
    ].join('\n'),
  )
}

async function replay(path: string): Promise<number> {
  const file = readCaseFile(path)
  const scenario = scenarioNamed(file.scenario)
  if (scenario === undefined) usage(`unknown scenario ${file.scenario} in ${path}`)
  console.log(`replaying ${path}: ${scenario.name}, ${scenario.describe(file.testCase)}`)
  const { broken, error } = await breaks(scenario, file.testCase, file.invariant)
  if (error === null) {
    console.log('passes now')
    return 0
  }
  console.error(`${broken ? 'still broken' : `breaks another invariant (${invariantOf(error)})`}: ${error instanceof Error ? error.message : String(error)}`)
  if (error instanceof Error && !(broken && error.name === 'InvariantViolation')) console.error(error.stack)
  return 1
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2))
  if (args.list) {
    for (const s of SCENARIOS) console.log(`${s.name.padEnd(36)} ${s.family.padEnd(14)} ${s.summary}`)
    return 0
  }
  if (args.replay !== undefined) return replay(args.replay)
  const selected = args.scenario === undefined ? SCENARIOS : [scenarioNamed(args.scenario) ?? usage(`unknown scenario ${args.scenario} (see --list)`)]
  if (args.iteration === undefined && args.iterations === undefined && args.seconds === undefined) args.seconds = 60
  const perScenario = args.seconds === undefined ? undefined : args.seconds / selected.length
  const tty = process.stdout.isTTY === true && !args.quiet
  console.log(
    `fuzz: seed ${args.seed}, ${selected.length} scenario(s)${perScenario === undefined ? '' : `, ${perScenario.toFixed(1)}s each`}${args.iteration === undefined ? '' : `, iteration ${args.iteration} only`}`,
  )
  const results: CampaignResult[] = []
  for (const scenario of selected) {
    const result = await runCampaign(scenario, {
      seed: args.seed,
      ...(perScenario === undefined ? {} : { seconds: perScenario }),
      ...(args.iterations === undefined ? {} : { iterations: args.iterations }),
      ...(args.iteration === undefined ? {} : { only: args.iteration }),
      shrinkSeconds: args.shrinkSeconds,
      avoidKnownBugs: args.avoidKnownBugs,
      progressEveryMs: tty ? 500 : 10_000,
      onProgress: (p) => {
        if (args.quiet) return
        if (tty) process.stdout.write(`\r${progressLine(p)}`)
        else console.log(progressLine(p))
      },
    })
    if (tty) process.stdout.write('\r\u001b[2K')
    console.log(`${progressLine({ scenario: scenario.name, iterations: result.iterations, meter: result.meter, elapsedMs: result.elapsedMs, budgetMs: null })}  ${result.failure === null ? 'ok' : 'FAILED'}`)
    if (result.failure !== null) reportFailure(result.failure, args.avoidKnownBugs)
    results.push(result)
  }
  const failed = results.filter((r) => r.failure !== null)
  const total = results.reduce((n, r) => n + r.iterations, 0)
  console.log(`fuzz: ${total} iterations, ${failed.length === 0 ? 'no invariant broke' : `${failed.length} scenario(s) FAILED: ${failed.map((r) => r.scenario).join(', ')}`} (seed ${args.seed})`)
  return failed.length === 0 ? 0 : 1
}

process.exitCode = await main()
