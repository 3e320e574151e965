// Which DSH runs the plugin (host-version.js reads its package versions; the sidecar judges them in host.check) and
// what the shim does with the verdict (reportHost: the log, and the terminal when the host is unsupported).
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, it } from 'node:test'
import { readHostVersions } from '../../shim-js/host-version.js'
import { reportHost } from '../../shim-js/index.js'

function put(path, text) {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, text)
}
const manifest = (name, version) => JSON.stringify({ name, version })

describe('reading the host versions', () => {
  it("finds DSH's package and its Cordis through pnpm's symlinked layout", () => {
    const root = mkdtempSync(join(tmpdir(), 'sg-host-'))
    const store = join(root, 'node_modules', '.pnpm', '@deepseek-ai+dsh@0.1.0-rc.8_x', 'node_modules', '@deepseek-ai')
    put(join(store, 'dsh', 'package.json'), manifest('@deepseek-ai/dsh', '0.1.0-rc.8'))
    put(join(store, 'dsh', 'lib', 'bin.js'), '')
    put(join(store, 'cordis', 'package.json'), manifest('@deepseek-ai/cordis', '4.0.4'))
    mkdirSync(join(root, 'node_modules', '@deepseek-ai'), { recursive: true })
    symlinkSync(join(store, 'dsh'), join(root, 'node_modules', '@deepseek-ai', 'dsh'))
    const script = join(root, 'node_modules', '@deepseek-ai', 'dsh', 'lib', 'bin.js')
    assert.deepEqual(readHostVersions(script), { dsh: '0.1.0-rc.8', cordis: '4.0.4' })
  })

  it("finds them in npm's flat layout", () => {
    const root = mkdtempSync(join(tmpdir(), 'sg-host-'))
    put(join(root, 'node_modules', '@deepseek-ai', 'dsh', 'package.json'), manifest('@deepseek-ai/dsh', '0.1.5-rc.2'))
    put(join(root, 'node_modules', '@deepseek-ai', 'dsh', 'lib', 'bin.js'), '')
    put(join(root, 'node_modules', '@deepseek-ai', 'cordis', 'package.json'), manifest('@deepseek-ai/cordis', '4.0.1'))
    assert.deepEqual(readHostVersions(join(root, 'node_modules', '@deepseek-ai', 'dsh', 'lib', 'bin.js')), { dsh: '0.1.5-rc.2', cordis: '4.0.1' })
  })

  it("says 'unknown' for a process that is not started by DSH's script", () => {
    const root = mkdtempSync(join(tmpdir(), 'sg-host-'))
    put(join(root, 'run.js'), '')
    assert.deepEqual(readHostVersions(join(root, 'run.js')), { dsh: 'unknown', cordis: 'unknown' })
    assert.deepEqual(readHostVersions(undefined), { dsh: 'unknown', cordis: 'unknown' })
  })
})

describe("the sidecar's verdict in the log and the terminal", () => {
  const logger = () => {
    const lines = []
    return { lines, info: (m) => lines.push(['info', m]), warn: (m) => lines.push(['warn', m]), debug: (m) => lines.push(['debug', m]) }
  }
  const sidecar = (verdict) => ({
    sent: null,
    async call(method, params) {
      assert.equal(method, 'host.check')
      this.sent = params
      return verdict
    },
  })

  it('warns in the log and the terminal when the host is unsupported', async () => {
    const log = logger()
    const terminal = []
    const message = 'DSH 0.1.5-rc.2 is not a version StrataGate-Py supports (supported: 0.1.0-rc.8)'
    const s = sidecar({ dsh: '0.1.5-rc.2', cordis: '4.0.1', verdict: 'unsupported', supported: false, message })
    await reportHost(s, { dsh: '0.1.5-rc.2', cordis: '4.0.1' }, log, (l) => terminal.push(l))
    assert.deepEqual(s.sent, { dsh: '0.1.5-rc.2', cordis: '4.0.1' })
    assert.deepEqual(log.lines, [['warn', `host: ${message}`]])
    assert.deepEqual(terminal, [`StrataGate: ${message}`])
  })

  it('notes a supported host in the log only', async () => {
    const log = logger()
    const terminal = []
    const s = sidecar({ dsh: '0.1.0-rc.8', cordis: '4.0.1', verdict: 'supported', supported: true, message: null })
    await reportHost(s, { dsh: '0.1.0-rc.8', cordis: '4.0.1' }, log, (l) => terminal.push(l))
    assert.deepEqual(log.lines, [['info', 'host: DSH 0.1.0-rc.8 (Cordis 4.0.1) is supported']])
    assert.deepEqual(terminal, [])
  })
})
