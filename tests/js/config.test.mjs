import assert from 'node:assert/strict'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { DEFAULTS, ENV_MAP, OPTIONS, defaultsOf, dshHome, effectiveDbPath, envMapOf, normalizeConfig, sidecarEnv } from '../../shim-js/config.js'
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

describe('options from plugin/settings.json (generated from the sidecar\'s settings table)', () => {
  it('names every option, its default and the variables of the options the sidecar reads', () => {
    assert.deepEqual(Object.keys(DEFAULTS).sort(), Object.keys(OPTIONS).sort())
    assert.deepEqual({ ...ENV_MAP }, { database: 'STRATAGATE_DB', blockTurns: 'STRATAGATE_BLOCK_TURNS', sessionIdleMinutes: 'STRATAGATE_SESSION_IDLE_MINUTES', context: 'STRATAGATE_CONTEXT_CONFIG', teamDsn: 'STRATAGATE_TEAM_DSN', teamMember: 'STRATAGATE_TEAM_MEMBER' })
    assert.deepEqual(OPTIONS.namespaceMode.choices, ['project', 'session', 'global'])
    assert.equal(OPTIONS.namespaceMode.sidecar, false, 'the mode travels with each namespace request, not as a variable')
    assert.deepEqual([OPTIONS.activationTimeoutMs.min, OPTIONS.activationTimeoutMs.max], [50, 60_000])
  })

  it('falls back to the default with a warning when an option the shim checks is out of bounds', () => {
    const { config, warnings } = normalizeConfig({ activationTimeoutMs: 10, contextTimeoutMs: '2500', captureSubagents: 'true' }, {})
    assert.equal(config.activationTimeoutMs, 1500)
    assert.equal(config.contextTimeoutMs, 2500, 'a number in a string is read')
    assert.equal(config.captureSubagents, true)
    assert.equal(warnings.length, 1)
    assert.match(warnings[0], /activationTimeoutMs must be an integer in 50–60000 \(got 10\); using 1500/)
    assert.match(normalizeConfig({ context: [1] }, {}).warnings[0], /context must be an object/)
  })

  it('a new row in the table is a new option: default, check and variable come from its spec alone', () => {
    // What `stratagate settings` writes for a page-editable setting that is also a plugin option (see
    // tests/test_settings_table.py, which makes this entry from an injected table row).
    const options = { ...OPTIONS, recallLimit: { setting: 'recall_limit', type: 'int', default: null, env: 'STRATAGATE_RECALL_LIMIT', sidecar: true } }
    assert.equal(defaultsOf(options).recallLimit, null)
    const { config, warnings } = normalizeConfig({ recallLimit: 12 }, {}, options)
    assert.deepEqual(warnings, [])
    assert.equal(config.recallLimit, 12)
    assert.equal(sidecarEnv(config, {}, envMapOf(options)).STRATAGATE_RECALL_LIMIT, '12')
    assert.deepEqual(normalizeConfig({ recallLimit: 12 }, {}).warnings, ["unknown option 'recallLimit' ignored"])
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
