// Find a Python ≥ 3.11 and get an interpreter that runs the bundled sidecar.
//
// Order: the plugin's `python` option (unless 'auto'), else $STRATAGATE_PYTHON, else python3 / python on PATH.
// An explicitly chosen interpreter that already imports `stratagate` at the bundled version is used as is (fast
// path for development and tests). Otherwise the found interpreter runs plugin/bootstrap_venv.py (standard library
// only), detached: it owns the private venv `$DSH_HOME/stratagate/venv-<package version>`, its lock, the pip
// install, install.log and the version stamp, and reports in `<venv>.status.json`, which this file reads.
// Interpreter discovery stays here: it has to happen before any Python environment exists.

import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { InstallReporter, readInstallProgress, terminalWriter } from './install-progress.js'

export const MIN_PYTHON = [3, 11]
/** How often the shim reads the installer's status file while it waits (the install itself takes minutes). */
const STATUS_POLL_MS = 500

/** Run a command; resolve {code, stdout, stderr} (never rejects; spawn errors give code null + error). */
export function run(command, args, { env = process.env, cwd, timeoutMs = 60_000, onLine, signal } = {}) {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve({ code: null, stdout: '', stderr: '', error: new Error('cancelled') })
      return
    }
    let child
    try {
      child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true })
    } catch (error) {
      resolve({ code: null, stdout: '', stderr: '', error })
      return
    }
    let stdout = ''
    let stderr = ''
    const feed = (chunk, which) => {
      const text = chunk.toString('utf8')
      if (which === 'out') stdout += text
      else stderr += text
      if (onLine) for (const line of text.split('\n')) if (line.trim()) onLine(line)
    }
    child.stdout.on('data', (c) => feed(c, 'out'))
    child.stderr.on('data', (c) => feed(c, 'err'))
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    const onAbort = () => child.kill('SIGKILL')
    signal?.addEventListener('abort', onAbort, { once: true })
    child.once('error', (error) => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      resolve({ code: null, stdout, stderr, error })
    })
    child.once('close', (code, killedBy) => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      resolve({ code, signal: killedBy, stdout, stderr })
    })
  })
}

/** The version the bundled sidecar declares (pyproject.toml [project] version), else the package version. */
export function bundledSidecarVersion(packageRoot) {
  try {
    const text = readFileSync(join(packageRoot, 'pyproject.toml'), 'utf8')
    const project = text.split(/^\[/m).find((section) => section.startsWith('project]'))
    const m = project && /^version\s*=\s*"([^"]+)"/m.exec(project)
    if (m) return m[1]
  } catch {}
  return packageVersion(packageRoot)
}

export function packageVersion(packageRoot) {
  try {
    return JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')).version ?? '0.0.0'
  } catch {
    return '0.0.0'
  }
}

/** {version: [maj, min, mic], executable} of an interpreter, or null if it does not run. */
export async function probePython(python, env, signal) {
  const r = await run(python, ['-c', 'import sys, json; print(json.dumps({"v": list(sys.version_info[:3]), "exe": sys.executable}))'], {
    env,
    timeoutMs: 20_000,
    signal,
  })
  if (r.code !== 0) return null
  try {
    const o = JSON.parse(r.stdout.trim().split('\n').pop())
    return { version: o.v, executable: o.exe }
  } catch {
    return null
  }
}

export function versionOk(version) {
  return Array.isArray(version) && (version[0] > MIN_PYTHON[0] || (version[0] === MIN_PYTHON[0] && version[1] >= MIN_PYTHON[1]))
}

/** The `stratagate` version an interpreter imports, or null. */
export async function importedStratagateVersion(python, env, signal) {
  const r = await run(python, ['-c', 'import stratagate; print(stratagate.__version__)'], { env, timeoutMs: 30_000, signal })
  return r.code === 0 ? r.stdout.trim().split('\n').pop() : null
}

function venvPythonPath(venv) {
  return process.platform === 'win32' ? join(venv, 'Scripts', 'python.exe') : join(venv, 'bin', 'python')
}

/** Interpreters to try, in order, with where each came from. */
export function pythonCandidates(configPython, env = process.env) {
  if (configPython && configPython !== 'auto') return [{ command: configPython, source: 'config', explicit: true }]
  if (env.STRATAGATE_PYTHON && env.STRATAGATE_PYTHON.trim()) return [{ command: env.STRATAGATE_PYTHON.trim(), source: 'env', explicit: true }]
  const names = process.platform === 'win32' ? ['python', 'python3', 'py'] : ['python3', 'python']
  return names.map((command) => ({ command, source: 'path', explicit: false }))
}

export class PythonEnvError extends Error {
  constructor(message, hint) {
    super(message)
    this.hint = hint
  }
}

/**
 * Resolve the interpreter that runs the sidecar, installing the venv when needed.
 * @param {object} options
 * @param {string} options.configPython - the plugin's `python` option ('auto' or a path).
 * @param {string} options.packageRoot - the npm package folder (pyproject.toml + sidecar/).
 * @param {string} options.home - $DSH_HOME/stratagate.
 * @param {Record<string,string>} [options.env]
 * @param {(state: string, detail?: string) => void} [options.onState] - 'probing' | 'installing'.
 * @param {(install: {log: string, since: number, pid: number|null}) => void} [options.onInstall] - where this start's
 *   installer writes (its log, its start time, its pid; again with the lock holder's pid when another process installs).
 * @param {{info: Function, warn: Function, debug?: Function}} [options.log]
 * @param {(line: string) => void} [options.terminal] - where a first-start install is reported as it goes (default:
 *   DSH's stderr, the terminal `dsh web` runs in).
 * @returns {Promise<{ok: true, python: string, venv: string|null, source: string, pythonVersion: string}
 *   | {ok: false, error: string, hint: string}>}
 */
export async function preparePython(options) {
  const { configPython, packageRoot, home, env = process.env, onState = () => {}, onInstall = () => {}, log = console, signal } = options
  const terminal = options.terminal ?? terminalWriter()
  const wanted = bundledSidecarVersion(packageRoot)
  const version = packageVersion(packageRoot)
  onState('probing')
  const tried = []
  let base = null
  for (const candidate of pythonCandidates(configPython, env)) {
    const info = await probePython(candidate.command, env, signal)
    if (!info) {
      tried.push(`${candidate.command} (not found or does not run)`)
      continue
    }
    if (!versionOk(info.version)) {
      tried.push(`${candidate.command} (Python ${info.version.join('.')}, too old)`)
      continue
    }
    base = { ...candidate, ...info }
    break
  }
  if (!base) {
    return {
      ok: false,
      error: `no Python ≥ ${MIN_PYTHON.join('.')} found (tried ${tried.join(', ')})`,
      hint:
        'Install Python 3.11 or newer, or point the plugin at one: set the `python` option of the stratagate row ' +
        '(in your profile cordis.patch.yml) or the STRATAGATE_PYTHON environment variable, then restart DSH.',
    }
  }
  const pythonVersion = base.version.join('.')
  if (base.explicit) {
    const imported = await importedStratagateVersion(base.command, env, signal)
    if (imported === wanted) {
      log.info?.(`using ${base.command} (Python ${pythonVersion}, stratagate ${imported} already installed; no venv)`)
      return { ok: true, python: base.command, venv: null, source: base.source, pythonVersion }
    }
  }
  const venv = join(home, `venv-${version}`)
  try {
    const python = await ensureVenv({ base, venv, packageRoot, wanted, env, onState, onInstall, log, signal, terminal })
    return { ok: true, python, venv, source: `venv (${base.source}: ${base.command})`, pythonVersion }
  } catch (error) {
    return {
      ok: false,
      error: `could not set up the sidecar venv ${venv}: ${error.message}`,
      hint:
        error.hint ??
        `Check the DSH log for the pip output. To retry, delete ${venv} and restart DSH; or install the sidecar yourself ` +
          `(pip install ${packageRoot}) into a Python ≥ 3.11 and set the plugin's \`python\` option to it.`,
    }
  }
}

/** The installer's report (`<venv>.status.json`), or null while there is none. */
export function readInstallStatus(venv) {
  try {
    const status = JSON.parse(readFileSync(`${venv}.status.json`, 'utf8'))
    return status && typeof status === 'object' && typeof status.state === 'string' ? status : null
  } catch {
    return null
  }
}

function alive(pid) {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return error?.code === 'EPERM'
  }
}

/**
 * Run plugin/bootstrap_venv.py with the base interpreter, DETACHED (it survives a short-lived DSH), and wait for
 * its status file to say `ready` (→ the venv's python) or `failed` (→ PythonEnvError with its hint), until `signal`
 * aborts. Only reports written after this start count; `installing` names the pid doing the work, and an
 * installer that is gone without a final report is an error that points at install.log.
 */
async function ensureVenv({ base, venv, packageRoot, wanted, env, onState, onInstall = () => {}, log, signal, terminal }) {
  mkdirSync(dirname(venv), { recursive: true, mode: 0o700 })
  const logFile = join(dirname(venv), 'install.log')
  const startedAt = Date.now() - 1000 // the installer's clock is this machine's; allow for rounding
  const script = join(packageRoot, 'plugin', 'bootstrap_venv.py')
  const child = spawn(base.command, [script, '--venv', venv, '--source', packageRoot, '--version', wanted], {
    detached: true,
    stdio: 'ignore',
    env,
    windowsHide: true,
  })
  let exited = false
  let onExit
  const exit = new Promise((resolve) => (onExit = resolve))
  child.on('error', () => ((exited = true), onExit()))
  child.on('exit', () => ((exited = true), onExit()))
  child.unref()
  // A report is ours when written after this start (1 s of clock slack) by our installer or the lock holder it named.
  // The pid matters for a retry right after a failure: the old report is younger than the slack.
  const installers = new Set([child.pid])
  const ours = (status) => Boolean(status) && Number(status.at) >= startedAt && (installers.has(status.pid) || status.state === 'installing')
  onInstall({ log: logFile, since: startedAt, pid: child.pid ?? null })
  let announced = false
  // The terminal hears of an install as it goes (DSH buffers its own log): every step, and its end.
  const reporter = new InstallReporter({ write: terminal ?? (() => {}), venv, log: logFile })
  const elapsed = () => Math.round((Date.now() - startedAt) / 1000)
  const fail = (error) => {
    reporter.finish(error.message, elapsed())
    return error
  }
  for (;;) {
    if (signal?.aborted) throw fail(new PythonEnvError('cancelled: DSH is stopping (the install continues in the background)'))
    const status = readInstallStatus(venv)
    const fresh = ours(status) ? status : null
    if (fresh?.state === 'installing') installers.add(fresh.pid)
    if (announced) reporter.update(readInstallProgress({ log: logFile, since: startedAt, pids: installers }))
    if (fresh?.state === 'ready') {
      if (announced) log.info?.(`sidecar ${wanted} installed into ${venv}`)
      reporter.finish(null, elapsed())
      return fresh.python
    }
    if (fresh?.state === 'failed') throw fail(new PythonEnvError(fresh.error ?? `the sidecar install failed; see ${logFile}`, fresh.hint ?? undefined))
    if (fresh?.state === 'installing' && !announced) {
      announced = true
      const who = fresh.pid === child.pid ? 'in the background' : `by another process (pid ${fresh.pid})`
      if (fresh.pid !== child.pid) onInstall({ log: logFile, since: startedAt, pid: fresh.pid })
      log.info?.(`installing the sidecar into ${venv} ${who} (first start only; log: ${logFile})`)
      onState('installing', `installing the Python sidecar into ${venv} (log: ${logFile})`)
      reporter.update(readInstallProgress({ log: logFile, since: startedAt, pids: installers }))
    }
    if (exited && (!fresh || (fresh.state === 'installing' && !alive(fresh.pid)))) {
      // Re-read once: the final report may have landed between the read above and the exit.
      const last = readInstallStatus(venv)
      if (!ours(last) || last.state === 'installing') {
        throw fail(new PythonEnvError(`the sidecar installer stopped without finishing; see ${logFile}`))
      }
      continue
    }
    // The installer exits right after its report when the venv is already installed (every start but the first):
    // read the report at once then. Not unref'd: this wait keeps the start-up going; DSH's unload aborts it.
    let timer
    const tick = new Promise((resolve) => (timer = setTimeout(resolve, STATUS_POLL_MS)))
    await (exited ? tick : Promise.race([exit, tick]))
    clearTimeout(timer)
  }
}
