import assert from 'node:assert/strict'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { DEFAULTS, dshHome, effectiveDbPath, normalizeConfig, sidecarEnv } from '../../shim-js/config.js'
import { methodFor, resolveRequest } from '../../shim-js/namespaces.js'

describe('config', () => {
  it('fills every default (a user patch replaces the whole config row)', () => {
    const { config, warnings } = normalizeConfig(undefined, { DSH_HOME: '/h' })
    assert.deepEqual(warnings, [])
    assert.deepEqual(config, { ...DEFAULTS })
    assert.equal(config.namespaceMode, 'project')
    assert.equal(config.database, null, "the sidecar's default")
    assert.equal(config.blockTurns, null, "the sidecar's default")
    assert.equal(config.activationTimeoutMs, 1500)
    assert.equal(config.captureSubagents, false)
  })

  it('finds DSH_HOME, else ~/.dsh; the database default is the sidecar\'s', () => {
    assert.equal(dshHome({ DSH_HOME: '  ' }), join(homedir(), '.dsh'))
    assert.equal(sidecarEnv(normalizeConfig({}, {}).config, { DSH_HOME: '/h' }).STRATAGATE_DB, undefined)
  })

  it('keeps valid options and warns about bad ones without throwing', () => {
    const { config, warnings } = normalizeConfig(
      { database: '/db/m.db', python: '/usr/bin/python3.12', namespaceMode: 'galaxy', blockTurns: 0, llmProvider: 'deepseek', typo: 1, captureSubagents: true },
      {},
    )
    assert.equal(config.database, '/db/m.db')
    assert.equal(config.python, '/usr/bin/python3.12')
    assert.equal(config.namespaceMode, 'project')
    // The sidecar validates its own settings (it refuses blockTurns 0 with one clear message, exit 2).
    assert.equal(config.blockTurns, 0)
    assert.equal(sidecarEnv(config, {}).STRATAGATE_BLOCK_TURNS, '0')
    assert.equal(config.captureSubagents, true)
    assert.equal(config.llmProvider, null, 'provider without model is ignored')
    assert.equal(warnings.length, 3)
    assert.ok(warnings.some((w) => /typo/.test(w)))
    assert.ok(warnings.some((w) => /namespaceMode/.test(w)))
    assert.ok(warnings.some((w) => /llmModel/.test(w)))
  })

  it('maps options to STRATAGATE_* variables for the sidecar', () => {
    const { config } = normalizeConfig({ database: '/db/m.db', blockTurns: 3 }, {})
    const env = sidecarEnv(config, { PATH: '/bin', DSH_HOME: '/h' })
    assert.equal(env.STRATAGATE_DB, '/db/m.db')
    assert.equal(env.STRATAGATE_BLOCK_TURNS, '3')
    assert.equal(env.PATH, '/bin')
    assert.equal(env.DSH_HOME, '/h')
    assert.equal(env.PYTHONUNBUFFERED, '1')
  })

  it('lets STRATAGATE_* variables already in the environment win over the config', () => {
    const { config } = normalizeConfig({ database: '/db/m.db', blockTurns: 3 }, {})
    const host = { STRATAGATE_DB: '/env/x.db', STRATAGATE_BLOCK_TURNS: '1', STRATAGATE_MODEL_TIMEOUT: '5' }
    const env = sidecarEnv(config, host)
    assert.equal(env.STRATAGATE_DB, '/env/x.db')
    assert.equal(env.STRATAGATE_BLOCK_TURNS, '1')
    assert.equal(env.STRATAGATE_MODEL_TIMEOUT, '5', 'other sidecar settings pass through')
    assert.equal(effectiveDbPath(config, host), '/env/x.db')
    // An empty variable counts as unset (as in the sidecar).
    assert.equal(sidecarEnv(config, { STRATAGATE_DB: '' }).STRATAGATE_DB, '/db/m.db')
  })
})

describe('namespace requests (the sidecar decides, with its fallback: tests/test_dsh_adapter.py)', () => {
  const session = { id: 's1', header: { cwd: '/work/proj' } }
  it('forward the mode, the session, its working directory and the global name', () => {
    assert.deepEqual(resolveRequest({ namespaceMode: 'project' }, session), { mode: 'project', session: 's1', cwd: '/work/proj' })
    assert.deepEqual(resolveRequest({ namespaceMode: 'project' }, { id: 's2', header: {} }), { mode: 'project', session: 's2' })
    assert.deepEqual(resolveRequest({ namespaceMode: 'global', globalNamespace: 'team' }, session), { mode: 'global', session: 's1', cwd: '/work/proj', name: 'team' })
  })
  it('use namespace.for_session; requests spooled by earlier versions keep namespace.resolve', () => {
    assert.equal(methodFor(resolveRequest({ namespaceMode: 'session' }, session)), 'namespace.for_session')
    assert.equal(methodFor({ mode: 'project', cwd: '/work/proj' }), 'namespace.resolve')
    assert.equal(methodFor({ mode: 'global', name: 'team' }), 'namespace.resolve')
  })
})
