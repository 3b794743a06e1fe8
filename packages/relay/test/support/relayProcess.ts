/**
 * A relay as a child process for these tests (`scripts/relayChild.ts`): on 127.0.0.1, a free
 * port unless `env` names one, stopped by its PID.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { killRelayChildren, RELAY_COMMAND, type RelayChild, type RelayExit, relayChildEnv, spawnRelayChild } from '../../scripts/relayChild.ts'

const PACKAGE = fileURLToPath(new URL('../..', import.meta.url))

/** How a process ended. */
export type Exit = RelayExit

/** A running relay process. */
export type RelayProcess = RelayChild

/** Runs the relay CLI with `env` and waits for its ready line. */
export function spawnRelay(env: Record<string, string>, timeoutMs = 60_000): Promise<RelayProcess> {
  return spawnRelayChild({ env, timeoutMs })
}

/** Runs the CLI to its end (for configuration errors): exit code and stderr. */
export async function runRelayToExit(env: Record<string, string>): Promise<Exit & { readonly stderr: string; readonly stdout: string }> {
  const [command, ...args] = RELAY_COMMAND
  const child = spawn(command, args, { cwd: PACKAGE, env: relayChildEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  let stdout = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
  })
  const exit = await new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  return { ...exit, stderr, stdout }
}

/** Kills (SIGKILL, by PID) every relay still running: a failed test must not leave one behind. */
export const killRelays = killRelayChildren
