import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')

/**
 * The Python that runs the real sidecar in these tests: $STRATAGATE_PYTHON, else <repo>/.venv (what `npm test`
 * creates), else /work/venv. Fails loudly (never skips) when none of them imports `stratagate`.
 */
export function sidecarPython() {
  const candidates = [
    process.env.STRATAGATE_PYTHON && { python: process.env.STRATAGATE_PYTHON, from: '$STRATAGATE_PYTHON' },
    { python: join(REPO, '.venv', process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python'), from: '<repo>/.venv' },
    { python: '/work/venv/bin/python', from: '/work/venv' },
  ].filter(Boolean)
  const tried = []
  for (const { python, from } of candidates) {
    if (python.includes('/') && !existsSync(python)) {
      tried.push(`${from} (${python}: missing)`)
      continue
    }
    const r = spawnSync(python, ['-c', 'import stratagate; print(stratagate.__version__)'], { encoding: 'utf8' })
    if (r.status === 0) return python
    tried.push(`${from} (${python}: ${r.error?.message ?? (r.stderr || '').trim().split('\n').pop()})`)
  }
  throw new Error(
    `no Python with the stratagate sidecar installed; tried ${tried.join('; ')}. ` +
      'Run `npm test` once (it creates .venv) or set STRATAGATE_PYTHON to an interpreter where `pip install -e .` was run.',
  )
}

/** The host environment without STRATAGATE_* (so a developer's settings never leak into tests), plus `extra`. */
export function cleanEnv(extra = {}) {
  const env = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('STRATAGATE_')) env[k] = v
  return { ...env, ...extra }
}

export const tempDir = (prefix = 'sg-js-') => mkdtempSync(join(tmpdir(), prefix))

/** Poll `check` until it returns a truthy value (no fixed sleeps as synchronisation). */
export async function waitFor(check, { timeoutMs = 20_000, intervalMs = 25, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}

export const quietLog = { info() {}, warn() {}, error() {}, debug() {}, recent: [] }
