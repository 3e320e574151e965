// What the browser tests share: the seeded database, the standalone viewer and the scripted model as real
// processes, and headless Debian chromium through playwright-core. No fixed sleeps: every wait is on a line a process
// prints, an element, or a response.
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { chromium } from 'playwright-core'
import { REPO, cleanEnv, sidecarPython } from '../js/helpers.mjs'

export { REPO, cleanEnv, sidecarPython, tempDir } from '../js/helpers.mjs'

export const CHROMIUM = '/usr/bin/chromium'
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
]

/** Headless chromium; playwright gives every launch a fresh temporary user-data-dir (removed on close). */
export function launchChromium() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS })
}

/**
 * DSH's web UI at `url` in a fresh browser context (`locale`, 1280×900): page errors go to `report.errors`, and DSH's
 * first-run notice (an onboarding dialog over everything) is acknowledged whenever it shows up.
 */
export async function openDshWeb(browser, { url, locale }, report) {
  const context = await browser.newContext({ locale, viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  page.on('pageerror', (err) => report.errors.push(String(err)))
  await page.addLocatorHandler(page.getByRole('button', { name: /^(Continue|继续)$/ }), async (button) => {
    report.steps.push('onboarding acknowledged')
    await button.click()
  })
  await page.goto(url)
  report.steps.push('loaded')
  return page
}

/**
 * One driver run against DSH's web UI: Chromium launched, `body(page, report)` run on `openDshWeb(args)`, and the
 * report printed as one JSON line. A failure is reported (`report.failure`), not thrown; what the browser showed is
 * saved to `args.screenshot` on success and on failure alike.
 */
export async function driveDshWeb(args, body) {
  const browser = await launchChromium()
  const report = { url: args.url, steps: [], errors: [] }
  let page
  try {
    page = await openDshWeb(browser, args, report)
    await body(page, report)
  } catch (err) {
    report.failure = String(err && err.stack ? err.stack : err)
  } finally {
    if (args.screenshot && page) await page.screenshot({ path: args.screenshot }).catch(() => {})
    await browser.close()
  }
  process.stdout.write(`${JSON.stringify(report)}\n`)
}

/** Where screenshots go: $STRATAGATE_SCREENSHOTS, else tests/browser/.screenshots/ (gitignored). */
export function screenshotDir() {
  const dir = process.env.STRATAGATE_SCREENSHOTS || join(REPO, 'tests', 'browser', '.screenshots')
  mkdirSync(dir, { recursive: true })
  return dir
}

/** The sidecar code of this checkout, whatever the venv's editable install points at. */
export function pythonEnv(extra = {}) {
  return cleanEnv({ PYTHONPATH: join(REPO, 'sidecar'), PYTHONUNBUFFERED: '1', ...extra })
}

/** tests/browser/seed.py into `db`: returns its JSON manifest (ids of what it wrote). */
export function seedDatabase(db) {
  const r = spawnSync(sidecarPython(), [join(REPO, 'tests', 'browser', 'seed.py'), '--db', db], {
    encoding: 'utf8',
    env: pythonEnv(),
    timeout: 180_000,
  })
  if (r.status !== 0) throw new Error(`seed.py failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`)
  return JSON.parse(r.stdout.trim().split('\n').pop())
}

/**
 * Start a process and resolve once a stdout line matches `pattern` (with the match); reject if it exits first or
 * `timeoutMs` passes. stderr is kept for the error message.
 */
export function startUntilLine(command, args, { env, pattern, timeoutMs = 60_000, cwd = REPO, onLine = null }) {
  const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => {
    stderr = (stderr + d).slice(-20_000)
  })
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    await exited
    clearTimeout(timer)
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop()
      reject(new Error(`${command} ${args.join(' ')}: no line matching ${pattern} within ${timeoutMs} ms\n${stderr}`))
    }, timeoutMs)
    const lines = createInterface({ input: child.stdout })
    lines.on('line', (line) => {
      const match = line.match(pattern)
      if (!match) return
      clearTimeout(timer)
      lines.removeAllListeners('line')
      if (onLine) lines.on('line', onLine) // what it prints later
      else child.stdout.resume() // keep draining it
      resolve({ child, match, stop, stderr: () => stderr })
    })
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`${command} ${args.join(' ')} exited (${code ?? signal}) before printing ${pattern}\n${stderr}`))
    })
  })
}

/**
 * tests/browser/flaky_model.py: the first `failSummaries` block summaries fail with HTTP 500. `failed(n)` resolves
 * once it has failed n of them (it prints a line at each).
 */
export async function startFlakyModel(failSummaries = 1) {
  let failures = 0
  const waiting = []
  const onLine = (line) => {
    if (line !== 'failed a summary') return
    failures += 1
    for (const w of waiting.filter((w) => failures >= w.n)) w.resolve()
  }
  const proc = await startUntilLine(
    sidecarPython(),
    [join(REPO, 'tests', 'browser', 'flaky_model.py'), '--fail-summaries', String(failSummaries)],
    { env: pythonEnv(), pattern: /^listening (\S+)/, onLine },
  )
  const failed = (n, timeoutMs = 60_000) =>
    failures >= n
      ? Promise.resolve()
      : new Promise((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`the scripted model failed ${failures} of ${n} summaries`)), timeoutMs)
          waiting.push({ n, resolve: () => (clearTimeout(timer), resolve()) })
        })
  return { ...proc, baseUrl: proc.match[1], failed }
}

/** `stratagate ui --db DB --port 0` (the standalone viewer); `env` adds STRATAGATE_* settings. */
export async function startViewer(db, env = {}) {
  const proc = await startUntilLine(sidecarPython(), ['-m', 'stratagate', 'ui', '--db', db, '--port', '0'], {
    env: pythonEnv({ STRATAGATE_DENSE: 'off', ...env }),
    pattern: /^StrataGate Memory: (http:\/\/127\.0\.0\.1:\d+\/)/,
  })
  return { ...proc, url: proc.match[1] }
}

export function removeDir(dir) {
  rmSync(dir, { recursive: true, force: true })
}
