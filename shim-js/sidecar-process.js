// The sidecar child process and its JSON-RPC 2.0 link over newline-delimited stdio (docs/protocol.md).
//
// Both directions: our requests (call/notify) and the sidecar's requests to us (`host.llm.complete`, answered by
// `onRequest`) and notifications (`jobs.changed`, `system.fatal`, given to `onNotification`).
// Lifecycle: spawn → `system.ping` until it answers (ready) → periodic ping health check. An unexpected exit is a
// crash: pending calls fail, and the process is restarted with exponential backoff; after `maxCrashes` crashes
// within `crashWindowMs` (or an exit with code 2, the sidecar's "cannot start") it gives up with state 'failed'.
// `stop()` drains, sends `system.shutdown`, waits, and SIGKILLs after a grace period.

import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

/** JSON-RPC error from the sidecar, with its code and data. */
export class RpcError extends Error {
  constructor(error, method) {
    super(typeof error?.message === 'string' && error.message ? error.message : `${method} failed`)
    this.name = 'RpcError'
    this.code = error?.code
    this.data = error?.data
    this.method = method
  }
}

/** The sidecar could not answer (not running, crashed, timed out); the call may be retried later. */
export class SidecarUnavailableError extends Error {
  constructor(message) {
    super(message)
    this.name = 'SidecarUnavailableError'
    this.retryable = true
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref?.())

export class SidecarProcess {
  /**
   * @param {object} o
   * @param {string} o.command - the Python interpreter.
   * @param {string[]} o.args - e.g. ['-m', 'stratagate', 'serve'].
   * @param {Record<string,string>} [o.env]
   * @param {(method: string, params: any) => Promise<any>} [o.onRequest] - answers sidecar → host requests.
   * @param {(method: string, params: any) => void} [o.onNotification]
   * @param {(info: {pid: number, version: string, restarts: number}) => void} [o.onReady] - after every (re)start.
   * @param {(state: string) => void} [o.onState]
   * @param {{info?: Function, warn?: Function, debug?: Function}} [o.log]
   */
  constructor(o) {
    this.command = o.command
    this.args = o.args ?? ['-m', 'stratagate', 'serve']
    this.env = o.env ?? process.env
    this.cwd = o.cwd
    this.onRequest = o.onRequest ?? (async (method) => Promise.reject(Object.assign(new Error(`unknown method ${method}`), { code: -32601 })))
    this.onNotification = o.onNotification ?? (() => {})
    this.onReady = o.onReady ?? (() => {})
    this.onState = o.onState ?? (() => {})
    this.log = o.log ?? {}
    this.maxCrashes = o.maxCrashes ?? 5
    this.crashWindowMs = o.crashWindowMs ?? 5 * 60_000
    this.backoffBaseMs = o.backoffBaseMs ?? 500
    this.backoffCapMs = o.backoffCapMs ?? 30_000
    this.startTimeoutMs = o.startTimeoutMs ?? 60_000
    this.pingIntervalMs = o.pingIntervalMs ?? 30_000
    this.pingTimeoutMs = o.pingTimeoutMs ?? 10_000

    this.state = 'stopped'
    this.child = null
    this.pid = null
    this.version = null
    this.restarts = 0
    this.lastError = null
    this.crashes = []
    this.nextId = 1
    this.pending = new Map()
    this.readyWaiters = new Set()
    this.stderrTail = []
    this.stopping = false
    this.restartTimer = null
    this.pingTimer = null
    this.missedPings = 0
    this.exited = Promise.resolve()
  }

  setState(state) {
    if (this.state === state) return
    this.state = state
    try {
      this.onState(state)
    } catch {}
    if (state === 'ready' || state === 'failed' || state === 'stopped') {
      for (const waiter of this.readyWaiters) waiter(state)
      this.readyWaiters.clear()
    }
  }

  /** Start again after giving up ('failed'): a fresh crash budget. False when it has not failed. */
  retry() {
    if (this.state !== 'failed' || this.stopping || this.child) return false
    this.crashes = []
    this.spawnChild()
    return true
  }

  /** Spawn the sidecar (no-op if already running or stopping). */
  start() {
    if (this.stopping || this.child) return
    this.spawnChild()
  }

  spawnChild() {
    this.setState(this.restarts > 0 || this.crashes.length > 0 ? 'restarting' : 'starting')
    let child
    try {
      child = spawn(this.command, this.args, { env: this.env, cwd: this.cwd, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true })
    } catch (error) {
      this.handleExit(null, null, error)
      return
    }
    this.child = child
    this.pid = child.pid ?? null
    let resolveExit
    this.exited = new Promise((resolve) => (resolveExit = resolve))
    let spawnError = null
    child.once('error', (error) => {
      spawnError = error
      // 'exit' may not follow a failed spawn; 'close' always does.
    })
    child.once('close', (code, signal) => {
      resolveExit()
      if (this.child === child) this.handleExit(code, signal, spawnError)
    })
    child.stdin.on('error', () => {}) // EPIPE after a crash: the exit handler reports it
    createInterface({ input: child.stdout, crlfDelay: Infinity }).on('line', (line) => this.handleLine(line))
    createInterface({ input: child.stderr, crlfDelay: Infinity }).on('line', (line) => {
      this.stderrTail.push(line)
      if (this.stderrTail.length > 40) this.stderrTail.shift()
      if (/ (ERROR|CRITICAL) /.test(line)) this.log.warn?.(`sidecar: ${line}`)
      else this.log.debug?.(`sidecar: ${line}`)
    })
    this.waitForPing(child)
  }

  async waitForPing(child) {
    try {
      const pong = await this.request('system.ping', undefined, { timeoutMs: this.startTimeoutMs, child })
      if (this.child !== child) return
      this.version = pong?.version ?? null
      this.missedPings = 0
      this.setState('ready')
      this.schedulePing()
      this.log.info?.(`sidecar ${this.version} ready (pid ${child.pid}${this.restarts ? `, restart ${this.restarts}` : ''})`)
      try {
        await this.onReady({ pid: child.pid, version: this.version, restarts: this.restarts })
      } catch (error) {
        this.log.warn?.(`after sidecar start: ${error?.message ?? error}`)
      }
    } catch (error) {
      if (this.child !== child || this.stopping) return
      this.lastError = `sidecar did not answer system.ping within ${this.startTimeoutMs} ms: ${error.message}`
      this.log.warn?.(this.lastError)
      child.kill('SIGKILL') // counted as a crash by the exit handler
    }
  }

  schedulePing() {
    clearTimeout(this.pingTimer)
    if (!this.pingIntervalMs || this.stopping) return
    this.pingTimer = setTimeout(async () => {
      const child = this.child
      if (!child || this.state !== 'ready') return
      try {
        await this.request('system.ping', undefined, { timeoutMs: this.pingTimeoutMs, child })
        this.missedPings = 0
      } catch (error) {
        if (this.child !== child || this.stopping) return
        this.missedPings++
        this.log.warn?.(`sidecar health check failed (${this.missedPings}): ${error.message}`)
        if (this.missedPings >= 2) {
          this.lastError = `sidecar stopped answering (health check failed twice: ${error.message}); restarting it`
          child.kill('SIGKILL')
          return
        }
      }
      this.schedulePing()
    }, this.pingIntervalMs)
    this.pingTimer.unref?.()
  }

  handleExit(code, signal, error) {
    clearTimeout(this.pingTimer)
    const child = this.child
    this.child = null
    this.pid = null
    const how = error ? `could not run ${this.command}: ${error.message}` : `exited with ${signal ? `signal ${signal}` : `code ${code}`}`
    // The sidecar's own problems, not its routine INFO lines.
    const tail = this.stderrTail.filter((l) => !/ (INFO|DEBUG) /.test(l)).slice(-6).join(' | ')
    for (const [id, p] of this.pending) {
      if (p.child !== child && child) continue
      this.pending.delete(id)
      clearTimeout(p.timer)
      p.reject(new SidecarUnavailableError(`the StrataGate sidecar ${how} before answering ${p.method}`))
    }
    if (this.stopping) {
      this.setState('stopped')
      return
    }
    const now = Date.now()
    this.crashes = this.crashes.filter((t) => now - t < this.crashWindowMs)
    this.crashes.push(now)
    const fatal = this.stderrTail.find((l) => /cannot start:|invalid configuration/.test(l))
    this.lastError = `sidecar ${how}${fatal ? `: ${fatal.replace(/^.*?(cannot start:|stratagate: )/, '$1')}` : tail ? ` (stderr: ${tail})` : ''}`
    this.log.warn?.(this.lastError)
    if (code === 2 || error?.code === 'ENOENT' || this.crashes.length >= this.maxCrashes) {
      const why = code === 2 ? 'it cannot start (exit code 2)' : error ? 'it cannot be run' : `${this.crashes.length} crashes within ${Math.round(this.crashWindowMs / 1000)} s`
      this.lastError = `gave up restarting the sidecar: ${why}. Last: ${this.lastError}`
      this.log.warn?.(this.lastError)
      this.setState('failed')
      return
    }
    const delay = Math.min(this.backoffCapMs, this.backoffBaseMs * 2 ** (this.crashes.length - 1))
    this.setState('restarting')
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null
      if (this.stopping) return
      this.restarts++
      this.spawnChild()
    }, delay)
    this.restartTimer.unref?.()
  }

  handleLine(line) {
    if (!line.trim()) return
    let message
    try {
      message = JSON.parse(line)
    } catch {
      this.log.warn?.(`sidecar wrote a line that is not JSON: ${line.slice(0, 200)}`)
      return
    }
    for (const m of Array.isArray(message) ? message : [message]) this.handleMessage(m)
  }

  handleMessage(m) {
    if (!m || typeof m !== 'object') return
    if (typeof m.method === 'string') {
      if (m.id !== undefined && m.id !== null) this.answer(m)
      else {
        if (m.method === 'system.fatal') this.lastError = `sidecar: ${m.params?.message ?? 'fatal error'}`
        try {
          this.onNotification(m.method, m.params)
        } catch (error) {
          this.log.warn?.(`notification ${m.method}: ${error?.message ?? error}`)
        }
      }
      return
    }
    const p = this.pending.get(m.id)
    if (!p) return // late reply after a timeout, or an error about an unparsable line (id null)
    this.pending.delete(m.id)
    clearTimeout(p.timer)
    if (m.error) p.reject(new RpcError(m.error, p.method))
    else p.resolve(m.result)
  }

  async answer(m) {
    const child = this.child
    let reply
    try {
      const result = await this.onRequest(m.method, m.params ?? {})
      reply = { jsonrpc: '2.0', id: m.id, result: result ?? null }
    } catch (error) {
      const code = Number.isInteger(error?.code) ? error.code : -32000
      reply = { jsonrpc: '2.0', id: m.id, error: { code, message: String(error?.message ?? error) || 'host error' } }
    }
    if (this.child === child && child) this.write(child, reply)
  }

  write(child, message) {
    if (!child?.stdin?.writable) return false
    child.stdin.write(JSON.stringify(message) + '\n')
    return true
  }

  /** Send a request to the current child without waiting for readiness. */
  request(method, params, { timeoutMs = 30_000, signal, child = this.child } = {}) {
    return new Promise((resolve, reject) => {
      if (!child) return reject(new SidecarUnavailableError(`the StrataGate sidecar is not running (${this.describe()})`))
      const id = this.nextId++
      if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'))
      const onAbort = () => fail(signal.reason ?? new Error('aborted'))
      const done = () => signal?.removeEventListener('abort', onAbort)
      const entry = {
        method,
        child,
        timer: null,
        resolve: (value) => (done(), resolve(value)),
        reject: (error) => (done(), reject(error)),
      }
      const fail = (error) => {
        if (!this.pending.has(id)) return
        this.pending.delete(id)
        clearTimeout(entry.timer)
        entry.reject(error)
      }
      if (timeoutMs) {
        entry.timer = setTimeout(() => fail(new SidecarUnavailableError(`the StrataGate sidecar did not answer ${method} within ${timeoutMs} ms`)), timeoutMs)
        entry.timer.unref?.()
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.pending.set(id, entry)
      const message = { jsonrpc: '2.0', id, method }
      if (params !== undefined) message.params = params
      if (!this.write(child, message)) fail(new SidecarUnavailableError(`the StrataGate sidecar's stdin is closed (${this.describe()})`))
    })
  }

  /** Resolve when the sidecar is ready; reject when it failed, stopped, or `timeoutMs` passed. */
  whenReady({ timeoutMs = 30_000, signal } = {}) {
    if (this.state === 'ready') return Promise.resolve()
    if (this.state === 'failed' || this.state === 'stopped' || this.stopping) {
      return Promise.reject(new SidecarUnavailableError(`the StrataGate sidecar is not available: ${this.describe()}`))
    }
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error('aborted'))
    return new Promise((resolve, reject) => {
      let timer
      const settle = (error) => {
        clearTimeout(timer)
        this.readyWaiters.delete(waiter)
        signal?.removeEventListener('abort', onAbort)
        if (error) reject(error)
        else resolve()
      }
      const waiter = (state) =>
        settle(state === 'ready' ? null : new SidecarUnavailableError(`the StrataGate sidecar is not available: ${this.describe()}`))
      const onAbort = () => settle(signal.reason ?? new Error('aborted'))
      this.readyWaiters.add(waiter)
      if (timeoutMs) {
        timer = setTimeout(() => settle(new SidecarUnavailableError(`the StrataGate sidecar is still ${this.state} after ${timeoutMs} ms`)), timeoutMs)
        timer.unref?.()
      }
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** Wait until ready (bounded by `timeoutMs`), then send; the same budget covers the reply. */
  async call(method, params, { timeoutMs = 30_000, signal } = {}) {
    const started = Date.now()
    await this.whenReady({ timeoutMs, signal })
    const left = timeoutMs ? Math.max(1, timeoutMs - (Date.now() - started)) : 0
    return this.request(method, params, { timeoutMs: left, signal })
  }

  notify(method, params) {
    const message = { jsonrpc: '2.0', method }
    if (params !== undefined) message.params = params
    return this.write(this.child, message)
  }

  describe() {
    if (this.state === 'failed') return this.lastError ?? 'failed'
    if (this.lastError && this.state !== 'ready') return `${this.state}; last error: ${this.lastError}`
    return this.state
  }

  /**
   * Stop for good: run `drain` (bounded by drainMs), send system.shutdown, close stdin, wait for the exit,
   * SIGKILL after graceMs.
   */
  async stop({ drain, drainMs = 2000, graceMs = 2500 } = {}) {
    if (this.stopping) return this.exited
    if (drain && this.state === 'ready') {
      await Promise.race([Promise.resolve().then(drain).catch(() => {}), sleep(drainMs)])
    }
    this.stopping = true
    clearTimeout(this.pingTimer)
    clearTimeout(this.restartTimer)
    const child = this.child
    if (!child) {
      this.setState('stopped')
      return
    }
    this.setState('stopping')
    const killer = setTimeout(() => {
      this.log.warn?.(`sidecar did not exit within ${graceMs} ms; killing it`)
      child.kill('SIGKILL')
    }, graceMs)
    try {
      await Promise.race([this.request('system.shutdown', undefined, { timeoutMs: graceMs, child }).catch(() => {}), this.exited])
      child.stdin.end()
      await this.exited
    } finally {
      clearTimeout(killer)
    }
    this.setState('stopped')
  }
}
