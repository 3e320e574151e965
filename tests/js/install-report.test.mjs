// What the terminal shows of the sidecar's first-start install (InstallReporter): its start, each step, a line when
// a step runs long, and its end; nothing at all when no install ran.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { InstallReporter } from '../../shim-js/install-progress.js'

const step = (name) => ({ name, started_at: '', done_at: null })
const progress = (names, elapsed_s, log_tail = []) => ({ state: 'installing', steps: names.map(step), elapsed_s, log_tail, error: null })

function reporter() {
  const lines = []
  const r = new InstallReporter({ write: (l) => lines.push(l), venv: '/h/venv-0.1.0', log: '/h/install.log', everyMs: 10_000 })
  return { r, lines }
}

describe('the first-start install in the terminal', () => {
  it('reports the start, each new step once, a line after 10 s without one, and the end', () => {
    const { r, lines } = reporter()
    r.update(progress([], 0), 0)
    r.update(progress(['create the venv'], 1), 1_000)
    r.update(progress(['create the venv', 'install the sidecar and its dependencies'], 3), 3_000)
    r.update(progress(['create the venv', 'install the sidecar and its dependencies'], 8), 8_000)
    r.update(progress(['create the venv', 'install the sidecar and its dependencies'], 13, ['Downloading numpy-2.1.3.whl (16.3 MB)']), 13_000)
    r.update(progress(['create the venv', 'install the sidecar and its dependencies'], 24, ['x'.repeat(150)]), 24_000)
    r.finish(null, 159)
    r.finish(null, 160) // once only
    assert.deepEqual(lines, [
      'StrataGate: installing the Python sidecar into /h/venv-0.1.0 (first start only, a few minutes; log: /h/install.log)',
      'StrataGate:   create the venv (1 s)',
      'StrataGate:   install the sidecar and its dependencies (3 s)',
      'StrataGate:   still installing (13 s): Downloading numpy-2.1.3.whl (16.3 MB)',
      `StrataGate:   still installing (24 s): ${'x'.repeat(99)}…`,
      'StrataGate: sidecar installed in 159 s; memory is starting',
    ])
  })

  it('names a failure with the log, credentials masked', () => {
    const { r, lines } = reporter()
    r.update(progress(['create the venv'], 1), 0)
    r.finish('pip install failed: https://u:secret@pypi.example/simple unreachable', 42)
    assert.equal(lines.at(-1), 'StrataGate: the sidecar install failed after 42 s: pip install failed: https://u:****@pypi.example/simple unreachable (log: /h/install.log)')
  })

  it('says nothing when no install was reported (every start but the first)', () => {
    const { r, lines } = reporter()
    r.finish(null, 0)
    assert.deepEqual(lines, [])
  })
})
