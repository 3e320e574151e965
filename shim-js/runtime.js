// The shim's moving parts behind one object: Python setup → sidecar process → spool-backed capture queue,
// namespace cache, tool calls, recall, the sidecar's model requests, and the status report.
// index.js wires DSH hooks to it; nothing here imports DSH.

import { join } from 'node:path'
import { CaptureQueue } from './capture.js'
import { effectiveDbPath, sidecarEnv, stratagateHome } from './config.js'
import { makeHostLlm } from './host-llm.js'
import { fitLine, lineBudget } from './line.js'
import { readInstallProgress } from './install-progress.js'
import { Namespaces, resolveRequest } from './namespaces.js'
import { bundledSidecarVersion, packageVersion, preparePython } from './python-env.js'
import { SidecarProcess } from './sidecar-process.js'
import { Spool } from './spool.js'
import { callIdsOf, sessionIdOf, sessionOrigin } from './turns.js'

export class Runtime {
  /**
   * @param {object} o
   * @param {object} o.config - normalized plugin config.
   * @param {string} o.packageRoot - the npm package folder.
   * @param {object} o.log - makeLogger() result.
   * @param {() => any} [o.llm] - the DSH llm service, if any.
   * @param {() => any} [o.defaultModel] - the DSH agentDefaultModel service, if any.
   * @param {(specs: object[]) => void} [o.onTools] - the sidecar's tools.list after each start.
   * @param {(sidecar: SidecarProcess) => Promise<void>|void} [o.onReady] - after each start, once tools are known.
   * @param {Record<string,string>} [o.env]
   * @param {object} [o.sidecarOptions] - SidecarProcess overrides (tests).
   */
  constructor(o) {
    this.config = o.config
    this.packageRoot = o.packageRoot
    this.log = o.log
    this.env = o.env ?? process.env
    this.llm = o.llm ?? (() => undefined)
    this.defaultModel = o.defaultModel ?? (() => undefined)
    this.onTools = o.onTools ?? (() => {})
    this.onReady = o.onReady ?? (() => {})
    this.sidecarOptions = o.sidecarOptions ?? {}
    this.home = stratagateHome(this.env)
    this.shimVersion = packageVersion(this.packageRoot)
    this.bundledVersion = bundledSidecarVersion(this.packageRoot)
    this.setup = { state: 'starting', detail: null, python: null, venv: null, error: null, hint: null }
    /** Where this start's venv installer writes ({log, since, pids}), null until it runs. */
    this.install = null
    this.sidecar = null
    this.lastRoute = null
    this.lastJob = null
    this.abort = new AbortController()
    this.stopping = false
    this.recalled = false
    this.readyAt = null
    /** Settles when Python setup ended (sidecar created, or memory unavailable). */
    this.setupDone = new Promise((resolve) => (this.markSetupDone = resolve))
    this.setupWaiters = new Set()
    this.namespaces = new Namespaces(async (method, req, options) => {
      const timeoutMs = options?.timeoutMs ?? 15_000
      const sidecar = await this.sidecarSoon(timeoutMs, options?.signal)
      return sidecar.call(method, req, { timeoutMs, signal: options?.signal })
    })
    this.spool = this.openSpool()
    this.captures = new CaptureQueue({
      spool: this.spool,
      sidecar: { get state() { return 'waiting' }, whenReady: () => Promise.reject(new Error('no sidecar yet')) },
      namespace: (req) => this.namespaces.forRequest(req),
      log: this.log,
      env: this.env,
    })
  }

  openSpool() {
    const dir = join(this.home, 'spool')
    try {
      const spool = new Spool(dir)
      const { adopted, badLines } = spool.open()
      if (adopted) this.log.info(`replaying ${adopted} spooled turn(s) from an earlier run`)
      if (badLines) this.log.warn(`ignored ${badLines} unreadable spool line(s) (a crash mid-write)`)
      return spool
    } catch (error) {
      this.log.error(`cannot use the spool folder ${dir} (${error.message}); captured turns are kept in memory only`)
      return new Spool(null)
    }
  }

  /** Python setup, then the sidecar. Never throws: problems end in state 'unavailable' or 'failed'. */
  async start() {
    try {
      await this.startSidecar()
    } catch (error) {
      this.setup = { ...this.setup, state: 'unavailable', error: `start-up failed: ${error?.message ?? error}`, hint: 'This is a bug in the StrataGate DSH shim; the DSH log has the details.' }
      this.log.error(`start-up failed: ${error?.stack ?? error}`)
    } finally {
      this.markSetupDone()
    }
  }

  async startSidecar() {
    const prepared = await preparePython({
      configPython: this.config.python,
      packageRoot: this.packageRoot,
      home: this.home,
      env: this.env,
      signal: this.abort.signal,
      log: this.log,
      onInstall: ({ log, since, pid }) => {
        const pids = this.install?.since === since ? this.install.pids : new Set()
        if (pid) pids.add(pid)
        this.install = { log, since, pids }
      },
      onState: (state, detail) => {
        this.setup.state = state === 'installing' ? 'installing' : 'starting'
        this.setup.detail = detail ?? null
        for (const wake of this.setupWaiters) wake()
      },
    })
    if (this.abort.signal.aborted) return
    if (!prepared.ok) {
      this.setup = { ...this.setup, state: 'unavailable', error: prepared.error, hint: prepared.hint }
      this.log.error(`StrataGate memory is unavailable: ${prepared.error}. ${prepared.hint}`)
      return
    }
    this.setup = { ...this.setup, state: 'ready', detail: null, python: { command: prepared.python, version: prepared.pythonVersion, source: prepared.source }, venv: prepared.venv }
    this.sidecar = new SidecarProcess({
      command: prepared.python,
      args: ['-m', 'stratagate', 'serve'],
      env: sidecarEnv(this.config, this.env),
      log: this.log,
      onRequest: (method, params) => this.answer(method, params),
      onNotification: (method, params) => this.notified(method, params),
      onReady: () => this.sidecarReady(),
      ...this.sidecarOptions,
    })
    this.captures.sidecar = this.sidecar
    this.sidecar.start()
  }

  async sidecarReady() {
    this.readyAt ??= Date.now()
    this.captures.kick()
    try {
      const specs = await this.sidecar.call('tools.list', undefined, { timeoutMs: 15_000 })
      this.onTools(specs)
    } catch (error) {
      this.log.warn(`tools.list failed: ${error.message}`)
    }
    await this.onReady(this.sidecar)
  }

  notified(method, params) {
    if (method === 'jobs.changed') {
      this.lastJob = params
      if (params?.status === 'failed') this.log.warn(`memory job ${params.job} (${params.kind} ${params.subject}) failed: ${params.error}`)
      else if (params?.error) this.log.debug(`memory job ${params.job}: ${params.status}: ${params.error}`)
    } else if (method === 'system.fatal') {
      this.log.error(`sidecar: ${params?.message}`)
    }
  }

  async answer(method, params) {
    if (method !== 'host.llm.complete') throw Object.assign(new Error(`unknown method '${method}'`), { code: -32601 })
    // While DSH shuts down its model service may already be gone. Not answering leaves the sidecar's job
    // 'running', so it is requeued at the next start without spending one of its attempts.
    const hang = () => new Promise(() => {})
    if (this.stopping) return hang()
    try {
      const result = await this.hostLlm(params)
      return result
    } catch (error) {
      if (this.stopping) return hang()
      this.log.warn(`host.llm.complete failed: ${error?.message ?? error}`)
      throw error
    }
  }

  hostLlm = (params) =>
    makeHostLlm({ llm: this.llm, route: () => this.route(), signal: this.abort.signal, log: this.log })(params)

  /** Model route for memory jobs: plugin options, else the last capturing session's route, else DSH's default. */
  route() {
    if (this.config.llmProvider && this.config.llmModel) return { provider: this.config.llmProvider, model: this.config.llmModel }
    if (this.lastRoute) return this.lastRoute
    try {
      const selection = this.defaultModel()?.currentSelection?.()
      if (selection?.provider && selection?.model) return { provider: selection.provider, model: selection.model }
    } catch {}
    return null
  }

  /** Remember the route of the session that just finished a turn (the memory jobs' fallback route). */
  noteRoute(session) {
    try {
      const config = session?.requestHeader?.()?.config
      if (config?.provider && config?.model) this.lastRoute = { provider: config.provider, model: config.model, sessionId: sessionIdOf(session) }
    } catch {}
  }

  /**
   * Spool one finished turn's raw events ({session, turn, events} from TurnBuffer) and deliver them; the sidecar
   * folds them (and decides whether a subagent's turn is kept). `canonical` gives the tools/result value of a call id.
   */
  capture(session, turn, canonical = () => undefined) {
    const values = {}
    for (const id of callIdsOf(turn.events)) {
      const hit = canonical(id)
      if (hit !== undefined) values[id] = hit.value
    }
    const raw = { session: turn.session, turn: turn.turn, events: turn.events, canonical: values, origin: sessionOrigin(session), capture_subagents: this.config.captureSubagents }
    this.noteRoute(session) // a fallback route for memory jobs: any session's configured model will do
    this.captures.enqueue({ resolve: resolveRequest(this.config, session), raw })
    return true
  }

  /**
   * DSH disposed the session: spool its close behind its turns, so the sidecar seals the session's open tail (the
   * last turns that do not fill a block) once they are stored. A session never captured is left alone there.
   */
  closeSession(session) {
    const id = sessionIdOf(session)
    if (!id) return false
    this.captures.enqueue({ resolve: resolveRequest(this.config, session), close: { session: id } })
    return true
  }

  /**
   * The sidecar once Python setup finished (waiting at most `timeoutMs`), or a clear error. During the first-start
   * install it fails at once: waiting minutes inside a model step helps nobody.
   */
  async sidecarSoon(timeoutMs, signal) {
    if (!this.sidecar && this.setup.state !== 'unavailable' && this.setup.state !== 'installing') {
      let timer
      let wake
      await Promise.race([
        this.setupDone,
        new Promise((resolve) => {
          timer = setTimeout(resolve, timeoutMs)
          wake = () => this.setup.state === 'installing' && resolve() // the install takes minutes: stop waiting
          this.setupWaiters.add(wake)
          signal?.addEventListener('abort', resolve, { once: true })
        }),
      ])
      clearTimeout(timer)
      this.setupWaiters.delete(wake)
      if (signal?.aborted) throw signal.reason ?? new Error('aborted')
    }
    return this.requireSidecar()
  }

  /** The sidecar, or a clear error saying why memory is not usable right now. */
  requireSidecar() {
    if (this.setup.state === 'unavailable') throw new Error(`StrataGate memory is unavailable: ${this.setup.error}. ${this.setup.hint}`)
    if (this.setup.state === 'installing') {
      throw new Error('StrataGate memory is still being set up (installing its Python sidecar; first start only). Try again in a minute.')
    }
    if (!this.sidecar) throw new Error('StrataGate memory is still starting. Try again in a few seconds.')
    if (this.sidecar.state === 'failed') {
      throw new Error(`StrataGate memory is unavailable: ${this.sidecar.lastError}. Restart DSH to try again; the sidecar log lines are in the DSH log.`)
    }
    return this.sidecar
  }

  /** Whether recall should even try this step. */
  recallAvailable() {
    return this.setup.state !== 'unavailable' && this.setup.state !== 'installing' && this.sidecar?.state !== 'failed' && !this.abort.signal.aborted
  }

  namespaceOf(session, signal, timeoutMs) {
    return this.namespaces.forSession(this.config, session, { signal, timeoutMs })
  }

  /** Execute a memory tool for the model. */
  async callTool(name, args, exec) {
    const session = exec?.agent?.session
    if (!session) throw new Error(`${name} can only be called from an agent session`)
    const sidecar = await this.sidecarSoon(30_000, exec?.signal)
    // Read-your-writes: a turn that just ended may still be on its way to the sidecar. Wait until it was tried
    // (not a fixed time: a sidecar that is still warming up would otherwise answer before the turn is stored).
    await this.captures.tried(30_000)
    const namespace = await this.namespaceOf(session, exec?.signal)
    const params = { namespace, session: sessionIdOf(session), name, arguments: args ?? {} }
    if (exec?.callId !== undefined) params.call_id = String(exec.callId)
    return sidecar.call('tools.call', params, { timeoutMs: 60_000, signal: exec?.signal })
  }

  /**
   * A memory-service call (`service.*`, shim-js/service.js) for another plugin: like a tool call, it waits for the
   * sidecar and for the turns spooled before it (read-your-writes), then forwards.
   */
  async serviceCall(method, params) {
    const sidecar = await this.sidecarSoon(30_000)
    await this.captures.tried(30_000)
    return sidecar.call(method, params, { timeoutMs: 60_000 })
  }

  /** This turn's open retrieval batches and the sidecar's reminder text (`evidence.open_batches`). */
  async openBatches(params, signal, timeoutMs) {
    const sidecar = await this.sidecarSoon(timeoutMs, signal)
    return sidecar.call('evidence.open_batches', params, { timeoutMs, signal })
  }

  /**
   * A context-engine call (`context.plan`, `context.landed`, `context.status`, `context.command`,
   * `context.settings.get|set`): waits for the sidecar at most `timeoutMs`, like recall.
   */
  async contextCall(method, params, { timeoutMs = 15_000, signal } = {}) {
    const sidecar = await this.sidecarSoon(timeoutMs, signal)
    return sidecar.call(method, params, { timeoutMs, signal })
  }

  /** `activation.render_step`: the sidecar picks the step's query from the raw step material and renders. */
  async render(params, signal, timeoutMs) {
    const sidecar = await this.sidecarSoon(timeoutMs, signal)
    const result = await sidecar.call('activation.render_step', fitLine(params, lineBudget(this.env)), { timeoutMs, signal })
    this.recalled = true
    return result
  }

  /**
   * Recall budget for one step: activationTimeoutMs, but at least COLD_START_MS until the first successful render
   * of this process (Python start-up and the sidecar's tokenizer build take 1–2 s idle and over 6 s on a loaded
   * machine, and the first step of a session is where recalled memory matters most: waiting once at start is
   * cheaper than a first step without its memory).
   */
  recallBudget() {
    const warm = this.recalled || (this.readyAt !== null && Date.now() - this.readyAt > Runtime.COLD_START_MS)
    return warm ? this.config.activationTimeoutMs : Math.max(this.config.activationTimeoutMs, Runtime.COLD_START_MS)
  }

  static COLD_START_MS = 15_000

  state() {
    if (this.abort.signal.aborted) return 'stopped'
    if (this.setup.state === 'unavailable' || this.setup.state === 'installing') return this.setup.state
    if (!this.sidecar) return 'starting'
    const s = this.sidecar.state
    return s === 'stopping' || s === 'stopped' ? 'stopped' : s
  }

  /** The shim's half of the status (docs/protocol.md `system.status` `host`). */
  hostState() {
    return {
      state: this.state(),
      detail: this.setup.detail,
      shim_version: this.shimVersion,
      bundled_sidecar: this.bundledVersion,
      python: this.setup.python,
      venv: this.setup.venv,
      db_path: effectiveDbPath(this.config, this.env),
      namespace_mode: this.config.namespaceMode,
      spooled_turns: this.spool.depth,
      captured_this_run: this.captures.captured,
      setup_error: this.setup.error,
      sidecar_error: this.sidecar?.lastError ?? null,
      capture_error: this.captures.lastError,
      hint: this.setup.hint,
      restarts: this.sidecar?.restarts ?? 0,
      pid: this.sidecar?.pid ?? null,
    }
  }

  /**
   * The install's progress for the status route: `{state, steps, elapsed_s, log_tail, error, log}` while an install
   * runs or after one ran in this process (failed or done); null when none was needed (the usual start).
   */
  installProgress() {
    if (!this.install) return null
    const progress = readInstallProgress({ log: this.install.log, since: this.install.since, pids: this.install.pids })
    const failed = this.setup.state === 'unavailable'
    if (!progress.steps.length && !progress.error && this.setup.state !== 'installing' && !failed) return null
    if (failed && !progress.error) progress.error = this.setup.error
    if (failed) progress.state = 'failed'
    return { ...progress, log: this.install.log }
  }

  /**
   * Try again after a failure (`POST /api/stratagate/install/retry`): a failed setup (install or no Python) runs
   * the whole start again — the installer re-installs what is incomplete —, a sidecar that kept crashing is started
   * again. Anything else has nothing to retry.
   * @returns {{retried: boolean, what?: 'install'|'sidecar', state: string, reason?: string}}
   */
  retry() {
    if (this.stopping || this.abort.signal.aborted) return { retried: false, state: 'stopped', reason: 'DSH is stopping' }
    if (this.setup.state === 'unavailable' && !this.sidecar) {
      this.setup = { state: 'starting', detail: null, python: null, venv: null, error: null, hint: null }
      this.install = null
      this.setupDone = new Promise((resolve) => (this.markSetupDone = resolve))
      this.start() // not awaited: an install takes minutes; the status route shows its progress
      return { retried: true, what: 'install', state: 'starting' }
    }
    if (this.sidecar?.state === 'failed' && this.sidecar.retry()) return { retried: true, what: 'sidecar', state: this.state() }
    const state = this.state()
    return { retried: false, state, reason: `nothing to retry: StrataGate memory is ${state}` }
  }

  /**
   * The status the Settings page shows: assembled by the sidecar (`system.status`). While the sidecar cannot answer
   * (installing, crashed, no Python) the shim's own half is all there is, in the same shape.
   */
  async status() {
    const host = this.hostState()
    const install = this.installProgress()
    if (this.sidecar?.state === 'ready') {
      const status = await this.sidecar.call('system.status', { host }, { timeoutMs: 2000 }).catch(() => null)
      if (status) return { ...status, install }
    }
    const spooled = host.spooled_turns
    return {
      state: host.state,
      detail: host.detail,
      version: { shim: host.shim_version, sidecar: this.sidecar?.version ?? null, bundled_sidecar: host.bundled_sidecar },
      python: host.python,
      venv: host.venv,
      db_path: host.db_path,
      namespace_mode: host.namespace_mode,
      model_route: null,
      queue: { depth: spooled, spooled_turns: spooled, jobs_queued: 0, jobs_running: 0, jobs_failed: 0 },
      counts: null,
      captured_this_run: host.captured_this_run,
      last_error: host.setup_error ?? host.sidecar_error ?? host.capture_error ?? null,
      hint: host.hint,
      restarts: host.restarts,
      pid: host.pid,
      install,
      source: 'shim',
    }
  }

  /** Ordered teardown: deliver spooled turns (bounded), stop the sidecar, close the spool. */
  async stop() {
    this.stopping = true
    const sidecar = this.sidecar
    if (!sidecar) this.abort.abort(new Error('StrataGate is stopping')) // cancels a running Python setup
    else await sidecar.stop({ drain: () => this.captures.drain(2000), drainMs: 2000, graceMs: 2500 })
    this.abort.abort(new Error('StrataGate is stopping'))
    this.captures.stop()
    this.spool.close()
  }
}
