/**
 * A benchmark child process (the device simulator, the dashboards) run from its TypeScript
 * source with an IPC channel: the orchestrator sends commands and awaits typed answers.
 */
import { type ChildProcess, fork } from 'node:child_process'

/**
 * A child process and its messages.
 *
 * @example
 * const devices = new ChildChannel<ToDevices, FromDevices>('devices', new URL('./deviceSimulator.ts', import.meta.url))
 * devices.send({ type: 'counters' })
 * const { counters } = await devices.next('counters')
 */
export class ChildChannel<Out, In extends { readonly type: string }> {
  readonly name: string
  readonly #child: ChildProcess
  readonly #queue: In[] = []
  readonly #waiters: { type: string; resolve: (message: In) => void; reject: (error: Error) => void }[] = []
  #exit: string | undefined

  constructor(name: string, entry: URL, nodeFlags: readonly string[] = []) {
    this.name = name
    this.#child = fork(entry, [], {
      execArgv: [...nodeFlags, '--import', 'tsx', '--conditions=@tidemark/source'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    this.#child.on('message', (message: In) => {
      if (message.type === 'error') {
        this.#failAll(new Error(`${name}: ${(message as unknown as { message: string }).message}`))
        return
      }
      const at = this.#waiters.findIndex((waiter) => waiter.type === message.type)
      if (at < 0) this.#queue.push(message)
      else this.#waiters.splice(at, 1)[0]?.resolve(message)
    })
    this.#child.once('exit', (code, signal) => {
      this.#exit = `${name} exited (${code ?? signal})`
      this.#failAll(new Error(this.#exit))
    })
  }

  /** The child's PID, for /proc readings and for stopping it. */
  get pid(): number {
    return this.#child.pid as number
  }

  get running(): boolean {
    return this.#child.exitCode === null && this.#child.signalCode === null
  }

  send(message: Out): void {
    this.#child.send(message as object)
  }

  /** The next message of `type` (one already received first); rejects after `timeoutMs` or when the child exits. */
  next<T extends In['type']>(type: T, timeoutMs = 600_000): Promise<Extract<In, { type: T }>> {
    const queued = this.#queue.findIndex((message) => message.type === type)
    if (queued >= 0) return Promise.resolve(this.#queue.splice(queued, 1)[0] as Extract<In, { type: T }>)
    if (this.#exit !== undefined) return Promise.reject(new Error(this.#exit))
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const at = this.#waiters.indexOf(waiter)
        if (at >= 0) this.#waiters.splice(at, 1)
        reject(new Error(`${this.name}: no '${type}' answer within ${timeoutMs} ms`))
      }, timeoutMs)
      const waiter = {
        type,
        resolve: (message: In) => {
          clearTimeout(timer)
          resolve(message as Extract<In, { type: T }>)
        },
        reject: (error: Error) => {
          clearTimeout(timer)
          reject(error)
        },
      }
      this.#waiters.push(waiter)
    })
  }

  /** SIGKILL by PID when it is still running (a child that did not stop when told). */
  kill(): void {
    if (this.running) process.kill(this.pid, 'SIGKILL')
  }

  /** Resolves once the child has exited (at once when it already has). */
  exited(): Promise<void> {
    if (!this.running) return Promise.resolve()
    return new Promise((resolve) => this.#child.once('exit', () => resolve()))
  }

  #failAll(error: Error): void {
    for (const waiter of this.#waiters.splice(0)) waiter.reject(error)
  }
}
