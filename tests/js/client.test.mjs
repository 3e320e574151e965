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
    assert.equal(injected.length, 1)
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
    mod.apply({ get: () => ({ inject: (_n, fn) => fn(), register: (_o, c) => (component = c) }) })
    const page = render(component())
    assert.match(page, /Failed/)
    assert.match(page, /gave up restarting the sidecar/)
    assert.match(page, /spooled turns 2/)
    assert.match(page, /\/h\/stratagate\/memory\.db/)
    assert.match(page, /Restarts 4/)
  })
})
