// Plugin config (the `stratagate` row of cordis.patch.yml, possibly replaced wholesale by a user patch) →
// normalized shim settings and the sidecar's environment. Pure; unit-tested in tests/js/config.test.mjs.
// Options the sidecar reads (database, blockTurns) are passed through as STRATAGATE_* variables unchecked: the
// sidecar validates its own settings and refuses to start with one clear message (exit 2, state `failed`), so
// the two sides can never disagree about what is valid or what the default is.

import { homedir } from 'node:os'
import { join } from 'node:path'

export const NAMESPACE_MODES = ['project', 'session', 'global']

/** DSH's home folder: $DSH_HOME, else ~/.dsh (the same rule DSH and the sidecar use). */
export function dshHome(env = process.env) {
  return env.DSH_HOME && env.DSH_HOME.trim() ? env.DSH_HOME : join(homedir(), '.dsh')
}

/** Where the shim keeps its own files: venvs, spool, logs. */
export function stratagateHome(env = process.env) {
  return join(dshHome(env), 'stratagate')
}

export const DEFAULTS = Object.freeze({
  database: null, // null → the sidecar's default, $DSH_HOME/stratagate/memory.db
  python: 'auto',
  namespaceMode: 'project',
  globalNamespace: 'default',
  blockTurns: null, // null → the sidecar's default (6)
  captureSubagents: false,
  activationTimeoutMs: 1500,
  llmProvider: null,
  llmModel: null,
  context: null, // null → the sidecar's context defaults (cost preset); an object → STRATAGATE_CONTEXT_CONFIG (JSON)
  contextTimeoutMs: 5000,
})

function positiveInt(value, fallback, { min = 1, max = Number.MAX_SAFE_INTEGER } = {}) {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value
  return Number.isInteger(n) && n >= min && n <= max ? n : fallback
}

function nonEmpty(value) {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null
}

/**
 * Fill defaults and reject nonsense without throwing: every problem becomes a warning and the default is used,
 * so a typo in a patch never stops DSH from starting.
 * @returns {{config: object, warnings: string[]}}
 */
export function normalizeConfig(raw, env = process.env) {
  const input = raw && typeof raw === 'object' ? raw : {}
  const warnings = []
  const known = new Set(Object.keys(DEFAULTS))
  for (const key of Object.keys(input)) if (!known.has(key)) warnings.push(`unknown option '${key}' ignored`)
  const config = { ...DEFAULTS }
  config.database = nonEmpty(input.database)
  config.python = nonEmpty(input.python) ?? 'auto'
  if (input.namespaceMode !== undefined) {
    if (NAMESPACE_MODES.includes(input.namespaceMode)) config.namespaceMode = input.namespaceMode
    else warnings.push(`namespaceMode must be one of ${NAMESPACE_MODES.join(', ')} (got ${JSON.stringify(input.namespaceMode)}); using 'project'`)
  }
  config.globalNamespace = nonEmpty(input.globalNamespace) ?? DEFAULTS.globalNamespace
  config.blockTurns = input.blockTurns === undefined || input.blockTurns === null || input.blockTurns === '' ? null : input.blockTurns
  config.captureSubagents = input.captureSubagents === true || input.captureSubagents === 'true'
  config.activationTimeoutMs = positiveInt(input.activationTimeoutMs, DEFAULTS.activationTimeoutMs, { min: 50, max: 60_000 })
  if (input.context === undefined || input.context === null) config.context = null
  else if (typeof input.context === 'object' && !Array.isArray(input.context)) config.context = input.context
  else warnings.push(`context must be an object of context-engine settings (got ${JSON.stringify(input.context)}); using the sidecar's defaults`)
  config.contextTimeoutMs = positiveInt(input.contextTimeoutMs, DEFAULTS.contextTimeoutMs, { min: 100, max: 120_000 })
  config.llmProvider = nonEmpty(input.llmProvider)
  config.llmModel = nonEmpty(input.llmModel)
  if ((config.llmProvider === null) !== (config.llmModel === null)) {
    warnings.push('llmProvider and llmModel must be set together; using the session route instead')
    config.llmProvider = null
    config.llmModel = null
  }
  return { config, warnings }
}

/** Plugin option → sidecar environment variable. Only options the sidecar reads are mapped. */
export const ENV_MAP = Object.freeze({
  database: 'STRATAGATE_DB',
  blockTurns: 'STRATAGATE_BLOCK_TURNS',
  context: 'STRATAGATE_CONTEXT_CONFIG',
})

/**
 * The sidecar's environment: the host's environment plus the mapped options. A STRATAGATE_* variable that is
 * already set (non-empty) in the host's environment wins over the config's value.
 * @returns {Record<string, string>}
 */
export function sidecarEnv(config, env = process.env) {
  const out = { ...env }
  for (const [option, variable] of Object.entries(ENV_MAP)) {
    const current = env[variable]
    if (current !== undefined && current !== '') continue
    const value = config[option]
    if (value === null || value === undefined || value === '') continue
    // Objects (the context settings) travel as JSON; the sidecar validates them as the defaults under the stored ones.
    out[variable] = typeof value === 'object' ? JSON.stringify(value) : String(value)
  }
  // The sidecar's stdout is the protocol; Python must not buffer it (it flushes itself, this is belt and braces).
  out.PYTHONUNBUFFERED = '1'
  if (!out.DSH_HOME) out.DSH_HOME = dshHome(env)
  return out
}

/** The database path the shim knows of (env wins), for the status while the sidecar cannot say; null = default. */
export function effectiveDbPath(config, env = process.env) {
  return nonEmpty(env.STRATAGATE_DB) ?? config.database
}
