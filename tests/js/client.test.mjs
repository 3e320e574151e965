// The browser bundle: loads in DSH's lazy-CJS factory shape, registers the "StrataGate Memory" settings section,
// and renders the status it fetched (with a stand-in React; no browser needed).
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import vm from 'node:vm'
import { REPO } from './helpers.mjs'

function loadClient() {
  const registrations = []
  const window = { __ModuleLoader__: { load: (r) => registrations.push(r) } }
  vm.runInNewContext(readFileSync(join(REPO, 'shim-js', 'client.js'), 'utf8'), { window, Symbol, Object, JSON, String, setInterval, clearInterval })
  assert.equal(registrations.length, 1)
  return registrations[0]
}

/** Just enough React: elements as plain objects; useState hands out `states` in call order. */
function fakeReact(states = []) {
  const calls = { effects: 0 }
  let n = 0
  return {
    calls,
    createElement: (type, props, ...children) => ({ type, props: { ...props, children: children.length === 1 ? children[0] : children }, children: children.flat() }),
    useState: (initial) => [n < states.length ? states[n++] : initial, () => {}],
    useEffect: () => {
      calls.effects++
    },
    useCallback: (fn) => fn,
    useRef: (initial) => ({ current: initial }),
  }
}

/** The tree with every function component replaced by what it rendered (each runs once: hooks take their states once). */
function expand(node) {
  if (node === null || node === undefined || typeof node !== 'object') return node
  if (Array.isArray(node)) return node.map(expand)
  if (typeof node.type === 'function') return expand(node.type(node.props))
  return { ...node, children: node.children.map(expand) }
}

/** The first node (function components expanded, as render does) that `test` accepts. */
function find(node, test) {
  if (node === null || node === undefined || typeof node !== 'object') return null
  if (Array.isArray(node)) {
    for (const child of node) {
      const hit = find(child, test)
      if (hit) return hit
    }
    return null
  }
  if (typeof node.type === 'function') return find(node.type(node.props), test)
  if (test(node)) return node
  return find(node.children, test)
}

function render(node) {
  if (node === null || node === undefined || node === false) return ''
  if (typeof node === 'string' || typeof node === 'number') return String(node)
  if (Array.isArray(node)) return node.map(render).join(' ')
  if (typeof node.type === 'function') return render(node.type(node.props))
  return node.children.map(render).join(' ')
}

describe('client bundle', () => {
  it('registers under the package id and adds the settings section with a nav label that fits', () => {
    const { id, factory } = loadClient()
    assert.equal(id, 'stratagate-py')
    const React = fakeReact()
    const mod = factory((name) => {
      assert.equal(name, 'react')
      return React
    })
    assert.equal(mod.name, 'stratagate-py')
    assert.deepEqual([...mod.inject], ['slots'])
    const injected = []
    const slots = {
      inject: (name, fn) => injected.push({ name, registration: fn() }),
      register: (options, component) => ({ options, component }),
    }
    mod.apply({ get: (name) => (name === 'slots' ? slots : undefined) })
    // Two slots: the settings section and (since the context engine) the composer dock glyph.
    assert.deepEqual(injected.map((i) => i.name), ['settings.section', 'conversation.composer.dock'])
    assert.equal(injected[0].registration.options.id, 'stratagate')
    // DSH's nav leaves ~112 px for a label: "StrataGate Memory" would be cut to "StrataGate Me…".
    const label = injected[0].registration.options.label()
    assert.equal(render(label).trim(), 'Memory')
    // Its own glyph (DSH gives a section it does not know General's gear; a rule of ours hides that one).
    assert.ok(find(label, (n) => n.type === 'svg'), 'the nav label carries its icon')
    assert.ok(find(label, (n) => n.props && 'data-stratagate-nav' in n.props), 'the label is marked for the gear-hiding rule')
    const page = render(injected[0].registration.component())
    assert.match(page, /StrataGate Memory/) // the section's heading says it whole
    assert.match(page, /Loading/)
  })

  it('follows a Chinese browser in the nav label', () => {
    const registrations = []
    const window = { __ModuleLoader__: { load: (r) => registrations.push(r) }, navigator: { language: 'zh-CN' } }
    vm.runInNewContext(readFileSync(join(REPO, 'shim-js', 'client.js'), 'utf8'), { window, Symbol, Object, JSON, String, setInterval, clearInterval })
    const mod = registrations[0].factory(() => fakeReact())
    let label
    mod.apply({ get: () => ({ inject: (_n, fn) => fn(), register: (o) => o.name === 'settings.section' && (label = o.label) }) })
    assert.equal(render(label()).trim(), '记忆')
  })

  // StrataGatePage's hooks, in call order: status, error, fetchedAt, retry, tick.
  const pageStates = (status, fetchedAt = Date.now()) => [status, null, fetchedAt, { busy: false, message: null }, 0]

  it('shows a failed sidecar: the state, the error, the queue and a Retry, not the Memory page', () => {
    const { factory } = loadClient()
    const status = {
      state: 'failed',
      detail: null,
      version: { shim: '0.1.0', sidecar: null },
      python: { command: '/usr/bin/python3', version: '3.12.1', source: 'path' },
      venv: '/h/stratagate/venv-0.1.0',
      db_path: '/h/stratagate/memory.db',
      namespace_mode: 'project',
      queue: { depth: 3, spooled_turns: 2, jobs_queued: 1, jobs_running: 0, jobs_failed: 0 },
      counts: null,
      last_error: 'gave up restarting the sidecar: 5 crashes within 300 s',
      hint: null,
      restarts: 4,
      install: null,
    }
    const mod = factory(() => fakeReact(pageStates(status)))
    let component
    mod.apply({ get: () => ({ inject: (_n, fn) => fn(), register: (o, c) => o.name === 'settings.section' && (component = c) }) })
    const tree = expand(component())
    const page = render(tree)
    assert.match(page, /StrataGate Memory/)
    assert.match(page, /Failed/)
    assert.match(page, /gave up restarting the sidecar/)
    assert.match(page, /spooled turns 2/)
    assert.match(page, /\/h\/stratagate\/memory\.db/)
    assert.match(page, /Restarts 4/)
    assert.match(page, /Retry/)
    assert.ok(find(tree, (n) => n.props && n.props['data-testid'] === 'install-progress'))
    assert.ok(!find(tree, (n) => n.props && 'data-stratagate-memory' in n.props), 'no Memory page while the sidecar is down')
  })

  it('shows the install in progress: its steps, the elapsed time and the log tail, no Retry', () => {
    const { factory } = loadClient()
    const status = {
      state: 'installing',
      detail: 'installing the Python sidecar into /h/venv-0.1.0',
      version: { shim: '0.1.0', sidecar: null },
      queue: {},
      restarts: 0,
      last_error: null,
      install: {
        state: 'installing',
        steps: [
          { name: 'create the venv', started_at: '2026-12-01T10:00:01.000Z', done_at: '2026-12-01T10:00:04.000Z' },
          { name: 'install the sidecar and its dependencies', started_at: '2026-12-01T10:00:04.000Z', done_at: null },
        ],
        elapsed_s: 75,
        log_tail: ['Collecting aiosqlite', 'Downloading numpy-2.1.0.whl'],
        error: null,
        log: '/h/stratagate/install.log',
      },
    }
    const mod = factory(() => fakeReact(pageStates(status)))
    let component
    mod.apply({ get: () => ({ inject: (_n, fn) => fn(), register: (o, c) => o.name === 'settings.section' && (component = c) }) })
    const page = render(component())
    assert.match(page, /Installing the Python sidecar/)
    assert.match(page, /Elapsed 1 min 1[5-9] s/)
    assert.match(page, /create the venv\s+—\s+done in 3 s/)
    assert.match(page, /install the sidecar and its dependencies\s+—\s+running for/)
    assert.match(page, /Downloading numpy/)
    assert.match(page, /\/h\/stratagate\/install\.log/)
    assert.doesNotMatch(page, /Retry/)
  })

  it('speaks Chinese to a Chinese browser while the sidecar installs', () => {
    const status = { state: 'installing', version: { shim: '0.1.0', sidecar: null }, queue: {}, restarts: 0, install: { state: 'installing', steps: [{ name: 'create the venv', started_at: '2026-12-01T10:00:01.000Z', done_at: null }], elapsed_s: 3, log_tail: [] } }
    const registrations = []
    const window = { __ModuleLoader__: { load: (r) => registrations.push(r) }, navigator: { language: 'zh-CN' } }
    vm.runInNewContext(readFileSync(join(REPO, 'shim-js', 'client.js'), 'utf8'), { window, Symbol, Object, JSON, String, Date, Math, setInterval, clearInterval })
    const mod = registrations[0].factory(() => fakeReact(pageStates(status)))
    let component
    mod.apply({ get: () => ({ inject: (_n, fn) => fn(), register: (o, c) => o.name === 'settings.section' && (component = c) }) })
    const page = render(expand(component()))
    assert.match(page, /正在安装 Python 边车进程/)
    assert.match(page, /已用时/)
    for (const english of ['Installing', 'Elapsed', 'Version', 'Database', 'Restarts', 'running for']) assert.doesNotMatch(page, new RegExp(english))
  })

  it('shows a failed install with its error, the hint and a Retry that posts to the retry route', async () => {
    const status = {
      state: 'unavailable',
      version: { shim: '0.1.0', sidecar: null },
      queue: {},
      restarts: 0,
      last_error: 'could not set up the sidecar venv /h/venv-0.1.0: pip install failed (exit 1): no index',
      hint: 'pip needs access to a package index',
      install: { state: 'failed', steps: [{ name: 'create the venv', started_at: '2026-12-01T10:00:01.000Z', done_at: null }], elapsed_s: 12, log_tail: [], error: 'pip install failed (exit 1): no index', log: '/h/install.log' },
    }
    const requests = []
    const registrations = []
    const window = { __ModuleLoader__: { load: (r) => registrations.push(r) } }
    const fetch = async (url, init) => (requests.push({ url, init }), { ok: true, json: async () => ({ retried: true }) })
    vm.runInNewContext(readFileSync(join(REPO, 'shim-js', 'client.js'), 'utf8'), { window, fetch, Symbol, Object, JSON, String, Promise, setInterval, clearInterval })
    const mod = registrations[0].factory(() => fakeReact(pageStates(status)))
    let component
    mod.apply({ get: () => ({ inject: (_n, fn) => fn(), register: (o, c) => o.name === 'settings.section' && (component = c) }) })
    const tree = expand(component())
    const page = render(tree)
    assert.match(page, /Unavailable/)
    assert.match(page, /pip install failed \(exit 1\): no index/)
    assert.match(page, /package index/)
    assert.match(page, /Took 12 s/)
    const retry = find(tree, (n) => n.props && n.props['data-testid'] === 'install-retry')
    assert.ok(retry)
    retry.props.onClick()
    await new Promise((r) => setImmediate(r))
    assert.equal(requests[0].url, '/api/stratagate/install/retry')
    assert.equal(requests[0].init.method, 'POST')
  })

  it('mounts the Memory page once the sidecar is ready: memory-page.js from the assets route, then mount(div, {api})', async () => {
    const ready = { state: 'ready', version: { shim: '0.1.0', sidecar: '0.1.0' }, queue: {}, restarts: 0, install: null }
    const registrations = []
    const appended = []
    const mounts = []
    const window = {
      __ModuleLoader__: { load: (r) => registrations.push(r) },
      document: { createElement: (tag) => ({ tag, attrs: {}, setAttribute(k, v) { this.attrs[k] = v }, remove() {} }), head: { appendChild: (el) => appended.push(el) } },
    }
    vm.runInNewContext(readFileSync(join(REPO, 'shim-js', 'client.js'), 'utf8'), { window, Symbol, Object, JSON, String, Promise, setInterval, clearInterval })
    const effects = []
    const React = fakeReact(pageStates(ready))
    React.useEffect = (fn) => effects.push(fn)
    const mod = registrations[0].factory(() => React)
    let component
    mod.apply({ get: () => ({ inject: (_n, fn) => fn(), register: (o, c) => o.name === 'settings.section' && (component = c) }) })
    const tree = expand(component())
    const box = find(tree, (n) => n.props && 'data-stratagate-memory' in n.props)
    assert.ok(box, 'the Memory page container')
    assert.ok(!find(tree, (n) => n.props && n.props['data-testid'] === 'install-progress'))
    // The context engine's settings live in the page's own Settings tab (once), not under every tab.
    assert.doesNotMatch(render(tree), /Context engine/)
    // Run MemoryPage's effect (the second effect: the first is the status poll, which needs fetch).
    const ref = find(box, (n) => n.props && n.props.ref).props.ref
    ref.current = { element: 'div' }
    const cleanup = effects[1]()
    assert.equal(appended.length, 1)
    assert.equal(appended[0].src, '/api/stratagate/memory/assets/memory-page.js')
    window.StrataGateMemoryPage = { mount: (el, options) => (mounts.push({ el, options }), { unmount: () => mounts.push('unmounted') }) }
    appended[0].onload()
    await new Promise((r) => setImmediate(r))
    assert.equal(mounts[0].el, ref.current)
    assert.equal(JSON.stringify(mounts[0].options), JSON.stringify({ api: '/api/stratagate/memory' })) // (another realm's object)
    cleanup()
    assert.equal(mounts[1], 'unmounted')
    // A second mount reuses the loaded script.
    effects[1]()
    await new Promise((r) => setImmediate(r))
    assert.equal(appended.length, 1)
    assert.equal(mounts.length, 3)
  })

  it('shows the session\'s context use and the sidecar\'s last-change label in the composer dock', () => {
    const { factory } = loadClient()
    const status = { session: 's1', window: 100_000, used_tokens: 41_000, last_change: { kind: 'fold', tier: 1, saved: 23_300, label: 'Fold T1 −23.3K' }, text: '…' }
    const mod = factory(() => fakeReact([status]))
    const registered = []
    mod.apply({ get: () => ({ inject: (_n, fn) => fn(), register: (o, c) => registered.push({ o, c }) }) })
    const dock = registered.find((r) => r.o.name === 'conversation.composer.dock')
    assert.deepEqual({ ...dock.o.inject('session-9') }, { sessionId: 'session-9' })
    assert.equal(render(dock.c({ sessionId: 'session-9' })), '◧  Context 41% · Fold T1 −23.3K')
    const own = factory(() => fakeReact([{ ...status, dock: '上下文 41% · 折叠 T1 −23.3K' }]))
    const again = []
    own.apply({ get: () => ({ inject: (_n, fn) => fn(), register: (o, c) => again.push({ o, c }) }) })
    assert.match(render(again[1].c({ sessionId: 's' })), /上下文 41%/, 'the sidecar\'s own dock text wins')
    const empty = factory(() => fakeReact([null]))
    const none = []
    empty.apply({ get: () => ({ inject: (_n, fn) => fn(), register: (o, c) => none.push({ o, c }) }) })
    assert.equal(none[1].c({ sessionId: 's' }), null, 'nothing before the first status')
  })
})
