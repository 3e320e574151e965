// The web profile's routes: DSH's browser-trust fence on every StrataGate route, the Memory page's prefix route
// forwarding to page.request unchanged, and the install retry route; the install progress read from install.log.
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { describe, it } from 'node:test'
import { maskLine, readInstallProgress } from '../../shim-js/install-progress.js'
import {
  INSTALL_RETRY_PATH,
  isTrustedRequest,
  MAX_PAGE_BODY,
  MEMORY_PREFIX,
  PAGE_TIMEOUT_MS,
  registerInstallRetryRoute,
  registerMemoryRoute,
  registerStatusRoute,
} from '../../shim-js/web.js'
import { quietLog, tempDir } from './helpers.mjs'

const HOST = '127.0.0.1:4100'

/** A node:http-like request: headers, method, url, and the body as a readable stream. */
function request(method, url, { headers = {}, body } = {}) {
  const req = Readable.from(body === undefined ? [] : [Buffer.from(body)])
  return Object.assign(req, { method, url, headers: { host: HOST, ...headers } })
}

function response() {
  return {
    statusCode: 200,
    headers: {},
    headersSent: false,
    setHeader(k, v) {
      this.headers[k.toLowerCase()] = v
    },
    end(body) {
      this.body = body
      this.headersSent = true
    },
    json() {
      return JSON.parse(this.body)
    },
  }
}

/** The routes a child plugin registers, by path. */
function registered(register) {
  const routes = new Map()
  const web = { webServer: { register: (r) => (routes.set(r.path, r), () => routes.delete(r.path)) }, effect: (fn) => fn() }
  register(web)
  return routes
}

function memoryRoute(call) {
  const calls = []
  const routes = registered((web) =>
    registerMemoryRoute(
      web,
      async (method, params, options) => {
        calls.push({ method, params, options })
        return call(params)
      },
      quietLog,
    ),
  )
  return { route: routes.get(MEMORY_PREFIX), calls }
}

describe('the browser-trust fence (DSH isTrustedApiRequest, loopback only)', () => {
  const trusted = (headers) => isTrustedRequest({ headers })
  it('takes loopback hosts, with or without a same-origin Origin', () => {
    for (const host of ['127.0.0.1:4100', 'localhost:4100', '[::1]:4100', '127.9.8.7', 'LOCALHOST:1']) assert.equal(trusted({ host }), true, host)
    assert.equal(trusted({ host: 'localhost:4100', origin: 'http://localhost:4100' }), true)
    assert.equal(trusted({ host: '127.0.0.1:4100', 'sec-fetch-site': 'same-origin' }), true)
  })
  it('refuses a foreign Host (DNS rebinding), a cross-site Origin and cross-site fetch metadata', () => {
    for (const host of ['evil.example:4100', '127.0.0.1.evil.example', '10.0.0.2:4100', '', '127.0.0.1@evil.example']) assert.equal(trusted({ host }), false, host)
    assert.equal(trusted({}), false)
    assert.equal(trusted({ host: HOST, origin: 'http://evil.example' }), false)
    assert.equal(trusted({ host: HOST, origin: 'http://127.0.0.1:4101' }), false)
    assert.equal(trusted({ host: HOST, origin: 'null' }), false)
    assert.equal(trusted({ host: HOST, 'sec-fetch-site': 'cross-site' }), false)
  })
  it('guards the exact routes too (DSH runs its fence only inside its own /api prefix route)', async () => {
    const routes = registered((web) => registerStatusRoute(web, async () => ({ state: 'ready' }), quietLog))
    const res = response()
    await routes.get('/api/stratagate/status').handler(request('GET', '/api/stratagate/status', { headers: { host: 'evil.example' } }), res)
    assert.equal(res.statusCode, 403)
    const ok = response()
    await routes.get('/api/stratagate/status').handler(request('GET', '/api/stratagate/status'), ok)
    assert.equal(ok.statusCode, 200)
    assert.equal(ok.json().state, 'ready')
  })
})

describe('the Memory page route', () => {
  it('is a prefix route forwarding method, path, query and body to page.request, and replies with its answer', async () => {
    const { route, calls } = memoryRoute(() => ({ status: 201, content_type: 'application/json; charset=utf-8', body: { ok: true, text: '中文' } }))
    assert.equal(route.kind, 'prefix')
    assert.equal(route.path, '/api/stratagate/memory')
    const res = response()
    await route.handler(request('GET', '/api/stratagate/memory/events?namespace=proj&limit=5&q=a%20b'), res)
    assert.deepEqual(calls[0].params, { method: 'GET', path: '/api/stratagate/memory/events', query: { namespace: 'proj', limit: '5', q: 'a b' }, body: null })
    assert.equal(calls[0].method, 'page.request')
    assert.equal(calls[0].options.timeoutMs, PAGE_TIMEOUT_MS)
    assert.equal(res.statusCode, 201)
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    assert.equal(res.headers['cache-control'], 'no-store')
    assert.deepEqual(res.json(), { ok: true, text: '中文' })

    const post = response()
    const body = JSON.stringify({ namespace: 'proj', id: 'evt_3', reason: 'wrong' })
    await route.handler(request('POST', '/api/stratagate/memory/events/forget', { body, headers: { 'content-type': 'application/json', origin: `http://${HOST}` } }), post)
    assert.deepEqual(calls[1].params, { method: 'POST', path: '/api/stratagate/memory/events/forget', query: {}, body: JSON.parse(body) })
    assert.equal(post.statusCode, 201)
  })

  it('sends a text body (an asset) as text with its content type, and HEAD without a body', async () => {
    const { route } = memoryRoute(() => ({ status: 200, content_type: 'text/javascript; charset=utf-8', body: 'window.X = 1\n' }))
    const res = response()
    await route.handler(request('GET', '/api/stratagate/memory/assets/memory-page.js'), res)
    assert.equal(res.body, 'window.X = 1\n')
    assert.equal(res.headers['content-type'], 'text/javascript; charset=utf-8')
    assert.equal(res.headers['x-content-type-options'], 'nosniff')
    const head = response()
    await route.handler(request('HEAD', '/api/stratagate/memory/assets/memory-page.js'), head)
    assert.equal(head.statusCode, 200)
    assert.equal(head.body, undefined)
  })

  it("passes the sidecar's 4xx through, with Allow on a 405", async () => {
    const { route } = memoryRoute(() => ({ status: 405, content_type: 'application/json; charset=utf-8', body: { error: '/undo takes POST', allow: ['POST'] } }))
    const res = response()
    await route.handler(request('GET', '/api/stratagate/memory/undo'), res)
    assert.equal(res.statusCode, 405)
    assert.equal(res.headers.allow, 'POST')
    assert.equal(res.json().error, '/undo takes POST')
  })

  it('answers HTTP framing problems itself, without calling the sidecar', async () => {
    const { route, calls } = memoryRoute(() => assert.fail('page.request must not be called'))
    const cases = [
      [request('GET', '/api/stratagate/memory/overview', { headers: { host: 'evil.example:4100' } }), 403],
      [request('GET', '/api/stratagate/memory/overview', { headers: { origin: 'http://evil.example' } }), 403],
      [request('DELETE', '/api/stratagate/memory/events'), 405],
      [request('POST', '/api/stratagate/memory/events/forget', { body: '{"id": ', headers: { 'content-type': 'application/json' } }), 400],
      [request('POST', '/api/stratagate/memory/events/forget', { body: '{"id": 1}', headers: { 'content-type': 'text/plain' } }), 415],
      [request('POST', '/api/stratagate/memory/imports/add', { body: 'x'.repeat(MAX_PAGE_BODY + 1), headers: { 'content-type': 'application/json' } }), 413],
      [request('POST', '/api/stratagate/memory/imports/add', { headers: { 'content-type': 'application/json', 'content-length': String(MAX_PAGE_BODY + 1) } }), 413],
    ]
    for (const [req, code] of cases) {
      const res = response()
      await route.handler(req, res)
      assert.equal(res.statusCode, code, `${req.method} ${JSON.stringify(req.headers)}`)
      assert.equal(typeof res.json().error, 'string')
    }
    assert.equal(calls.length, 0)
    const res = response()
    await route.handler(request('DELETE', '/api/stratagate/memory/events'), res)
    assert.equal(res.headers.allow, 'GET, HEAD, POST')
  })

  it('accepts a body of exactly 1 MiB and a POST without a body', async () => {
    const { route, calls } = memoryRoute(() => ({ status: 200, content_type: 'application/json; charset=utf-8', body: {} }))
    const text = JSON.stringify({ text: 'x'.repeat(MAX_PAGE_BODY - 11) })
    assert.equal(Buffer.byteLength(text), MAX_PAGE_BODY)
    const res = response()
    await route.handler(request('POST', '/api/stratagate/memory/imports/add', { body: text, headers: { 'content-type': 'application/json' } }), res)
    assert.equal(res.statusCode, 200)
    await route.handler(request('POST', '/api/stratagate/memory/jobs/retry'), response())
    assert.equal(calls[1].params.body, null)
  })

  it('is 503 while the sidecar cannot answer, 400 when page.request refuses its params', async () => {
    const down = memoryRoute(() => {
      throw new Error('StrataGate memory is still being set up (installing its Python sidecar; first start only). Try again in a minute.')
    })
    const res = response()
    await down.route.handler(request('GET', '/api/stratagate/memory/overview'), res)
    assert.equal(res.statusCode, 503)
    assert.match(res.json().error, /still being set up/)
    assert.equal(res.headers['retry-after'], '5')
    const refused = memoryRoute(() => {
      throw Object.assign(new Error('path: String should have at most 2048 characters'), { code: -32602, data: [{ loc: ['path'] }] })
    })
    const bad = response()
    await refused.route.handler(request('GET', `/api/stratagate/memory/${'x'.repeat(3000)}`), bad)
    assert.equal(bad.statusCode, 400)
    assert.deepEqual(bad.json().details, [{ loc: ['path'] }])
  })
})

describe('the install retry route', () => {
  it('is POST only: 202 when something restarts, 409 with the reason otherwise', async () => {
    let outcome = { retried: true, what: 'install', state: 'starting' }
    const routes = registered((web) => registerInstallRetryRoute(web, () => outcome, quietLog))
    const route = routes.get(INSTALL_RETRY_PATH)
    const res = response()
    await route.handler(request('POST', INSTALL_RETRY_PATH), res)
    assert.equal(res.statusCode, 202)
    assert.deepEqual(res.json(), outcome)
    outcome = { retried: false, state: 'ready', reason: 'nothing to retry: StrataGate memory is ready' }
    const no = response()
    await route.handler(request('POST', INSTALL_RETRY_PATH), no)
    assert.equal(no.statusCode, 409)
    const get = response()
    await route.handler(request('GET', INSTALL_RETRY_PATH), get)
    assert.equal(get.statusCode, 405)
    const foreign = response()
    await route.handler(request('POST', INSTALL_RETRY_PATH, { headers: { origin: 'http://evil.example' } }), foreign)
    assert.equal(foreign.statusCode, 403)
  })
})

describe('install progress from install.log', () => {
  const line = (iso, pid, text) => `${iso} [${pid}] ${text}\n`
  it("reads this install's steps, times, log tail and failure; earlier installs and other pids are left out", () => {
    const dir = tempDir()
    mkdirSync(dir, { recursive: true })
    const log = join(dir, 'install.log')
    const since = Date.parse('2026-12-01T10:00:00.000Z')
    writeFileSync(
      log,
      line('2026-11-30T09:00:00.000Z', 7, 'step: create the venv') +
        line('2026-11-30T09:00:01.000Z', 7, 'FAILED: an older failure') +
        line('2026-12-01T10:00:01.000Z', 42, 'step: create the venv') +
        line('2026-12-01T10:00:01.100Z', 42, 'creating /h/venv-0.1.0 with /usr/bin/python3') +
        line('2026-12-01T10:00:02.000Z', 99, 'step: someone else') +
        line('2026-12-01T10:00:04.000Z', 42, 'step: install the sidecar and its dependencies') +
        line('2026-12-01T10:00:04.100Z', 42, '  Looking in indexes: https://user:hunter2@pypi.example/simple') +
        'a line without a stamp\n',
    )
    const running = readInstallProgress({ log, since, pids: [42], now: Date.parse('2026-12-01T10:00:11.000Z') })
    assert.equal(running.state, 'installing')
    assert.deepEqual(
      running.steps.map((s) => [s.name, s.started_at, s.done_at]),
      [
        ['create the venv', '2026-12-01T10:00:01.000Z', '2026-12-01T10:00:04.000Z'],
        ['install the sidecar and its dependencies', '2026-12-01T10:00:04.000Z', null],
      ],
    )
    assert.equal(running.elapsed_s, 10)
    assert.equal(running.error, null)
    assert.deepEqual(running.log_tail.slice(-1), ['Looking in indexes: https://user:****@pypi.example/simple'])
    assert.ok(!running.log_tail.join('\n').includes('hunter2'))

    writeFileSync(log, line('2026-12-01T10:00:30.000Z', 42, 'FAILED: pip install failed (exit 1): no index'), { flag: 'a' })
    const failed = readInstallProgress({ log, since, pids: [42], now: Date.parse('2026-12-01T10:05:00.000Z') })
    assert.equal(failed.state, 'failed')
    assert.equal(failed.error, 'pip install failed (exit 1): no index')
    assert.equal(failed.elapsed_s, 29) // ends at the failure, not now
    assert.equal(failed.steps.at(-1).done_at, null) // the step that failed
  })

  it('is empty (not an error) when the log does not exist yet', () => {
    const p = readInstallProgress({ log: join(tempDir(), 'install.log'), since: 0, now: 2500 })
    assert.deepEqual(p, { state: 'installing', steps: [], elapsed_s: 2.5, log_tail: [], error: null })
  })

  it('masks credentials of index URLs only', () => {
    assert.equal(maskLine('https://u:p@h/x and http://h:8080/y'), 'https://u:****@h/x and http://h:8080/y')
  })
})

describe('the install status and Retry through the Runtime (real plugin/bootstrap_venv.py)', () => {
  it('shows a failed install with its steps and error, and Retry runs the start again', { timeout: 240_000 }, async () => {
    const { copyFileSync, rmSync, symlinkSync } = await import('node:fs')
    const { normalizeConfig } = await import('../../shim-js/config.js')
    const { Runtime } = await import('../../shim-js/runtime.js')
    const { REPO, cleanEnv, sidecarPython, waitFor } = await import('./helpers.mjs')
    const PYTHON = sidecarPython()
    // A package root without pyproject.toml: the venv is created, then pip refuses the source.
    const root = tempDir()
    mkdirSync(join(root, 'plugin'))
    copyFileSync(join(REPO, 'plugin', 'bootstrap_venv.py'), join(root, 'plugin', 'bootstrap_venv.py'))
    copyFileSync(join(REPO, 'package.json'), join(root, 'package.json'))
    const bin = tempDir()
    symlinkSync(PYTHON, join(bin, 'python3'))
    const dshHome = tempDir()
    const env = cleanEnv({ PATH: `${bin}:/usr/bin:/bin`, DSH_HOME: dshHome, PYTHONPATH: join(REPO, 'sidecar'), STRATAGATE_MODEL_ROUTE: 'none', STRATAGATE_DENSE: 'off' })
    const { config } = normalizeConfig({ python: 'auto' })
    const seen = []
    const log = { info: (m) => seen.push(m), warn: (m) => seen.push(m), error: (m) => seen.push(m), debug() {} }
    const runtime = new Runtime({ config, packageRoot: root, log, env })
    try {
      await runtime.start()
      assert.equal(runtime.state(), 'unavailable')
      const status = await runtime.status()
      assert.equal(status.install.state, 'failed')
      assert.deepEqual(status.install.steps.map((s) => s.name), ['create the venv', 'install the sidecar and its dependencies'])
      assert.ok(status.install.steps[0].done_at !== null)
      assert.equal(status.install.steps[1].done_at, null)
      assert.match(status.install.error, /pip install failed/)
      assert.ok(status.install.elapsed_s > 0)
      assert.ok(status.install.log_tail.length > 0)
      assert.equal(status.install.log, join(dshHome, 'stratagate', 'install.log'))
      assert.match(status.last_error, /could not set up the sidecar venv/)

      // The user fixes the cause (here: a venv that already has the sidecar) and presses Retry.
      const venv = join(dshHome, 'stratagate', 'venv-0.1.0')
      rmSync(venv, { recursive: true, force: true })
      mkdirSync(join(venv, 'bin'), { recursive: true })
      // a wrapper, not a symlink: the interpreter must find its own venv (site-packages) to run the sidecar
      writeFileSync(join(venv, 'bin', 'python'), `#!/bin/sh\nexec ${JSON.stringify(PYTHON)} "$@"\n`, { mode: 0o755 })
      writeFileSync(join(venv, '.stratagate-installed'), JSON.stringify({ version: '0.1.0' }))
      assert.deepEqual(runtime.retry(), { retried: true, what: 'install', state: 'starting' })
      assert.equal(runtime.retry().retried, false) // already under way
      await waitFor(() => runtime.state() === 'ready', { timeoutMs: 120_000, what: 'the sidecar after Retry' }).catch((e) => {
        throw new Error(`${e.message}; state ${runtime.state()}; log: ${seen.join(' / ')}`)
      })
      const after = await runtime.status()
      assert.equal(after.state, 'ready')
      assert.equal(after.install, null) // nothing was installed this time
      assert.deepEqual(runtime.retry(), { retried: false, state: 'ready', reason: 'nothing to retry: StrataGate memory is ready' })
    } finally {
      await runtime.stop()
    }
  })
})
