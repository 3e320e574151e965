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

/** Just enough React: elements as plain objects; useState hands out `states` in call order (status, error). */
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
  }
}

function render(node) {
  if (node === null || node === undefined || node === false) return ''
  if (typeof node === 'string' || typeof node === 'number') return String(node)
  if (Array.isArray(node)) return node.map(render).join(' ')
  if (typeof node.type === 'function') return render(node.type(node.props))
  return node.children.map(render).join(' ')
}

describe('client bundle', () => {
  it('registers under the package id and adds the settings section', () => {
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
    assert.equal(injected[0].name, 'settings.section')
    assert.equal(injected[0].registration.options.label(), 'StrataGate Memory')
    const page = render(injected[0].registration.component())
    assert.match(page, /StrataGate Memory/)
    assert.match(page, /Loading/)
  })

  it('shows the state, the error and the queue from the status route', () => {
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
    }
    const React = fakeReact([status, null])
    const mod = factory(() => React)
    let component
    mod.apply({ get: () => ({ inject: (_n, fn) => fn(), register: (o, c) => o.name === 'settings.section' && (component = c) }) })
    const page = render(component())
    assert.match(page, /Failed/)
    assert.match(page, /gave up restarting the sidecar/)
    assert.match(page, /spooled turns 2/)
    assert.match(page, /\/h\/stratagate\/memory\.db/)
    assert.match(page, /Restarts 4/)
    assert.match(page, /Context/)
    assert.match(page, /Loading the context settings/)
  })

  it('renders the Context form from the effective settings: mode, every switch, every threshold', () => {
    const { factory } = loadClient()
    const settings = { mode: 'cost', enabled: true, auto_fold: true, reminders: false, mid_turn_cards: false, pressure_line: 0.6, min_batch_tokens: 5000 }
    // Each mount gets fresh hook states (status, error, then the form's settings, message).
    const mount = () => {
      const mod = factory(() => fakeReact([{ state: 'ready', version: { shim: '0.1.0', sidecar: '0.1.0' }, queue: {}, restarts: 0 }, null, settings, null]))
      let page
      mod.apply({ get: () => ({ inject: (_n, fn) => fn(), register: (o, c) => o.name === 'settings.section' && (page = c) }) })
      return page()
    }
    const text = render(mount())
    for (const label of ['Mode', 'Automatic folds', 'Reminders', 'Context engine on', 'Cards before each step', 'pressure_line', 'min_batch_tokens']) assert.match(text, new RegExp(label))
    const inputs = []
    const walk = (node) => {
      if (!node || typeof node !== 'object') return
      if (Array.isArray(node)) return node.forEach(walk)
      if (typeof node.type === 'function') return walk(node.type(node.props))
      if (node.type === 'input' || node.type === 'select') inputs.push(node.props)
      ;(node.children || []).forEach(walk)
    }
    walk(mount())
    assert.equal(inputs.find((i) => i.type === 'checkbox' && i.checked === false && i.onChange) !== undefined, true)
    assert.deepEqual(inputs.filter((i) => i.type === 'number').map((i) => i.defaultValue), [0.6, 5000])
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
