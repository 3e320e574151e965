// Web profile: DSH runs each web session's agent from an agent preset, and the shipped presets mount DSH's own
// compaction-basic inside the preset (the host row our bundle patch replaces is not used there; web-facts.md).
// So the shim writes one user preset, `$DSH_HOME/.agent-presets/stratagate/`, which is the installed `standard`
// preset with its compaction-basic row pointing at our loader row (`stratagate-py/compaction`, which always imports:
// it falls back to the stock engine), and the bundle patch makes it the default preset. Host glue: a file DSH reads;
// rewritten only when its text would change (DSH's own preset copies are 0600 in a 0700 folder, so are ours).

import { chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { dshHome } from './config.js'

export const PRESET_ID = 'stratagate'
export const ENGINE_ROW = 'stratagate-py/compaction'
const STOCK_ROW = /^([ \t]*name:[ \t]*)['"]?@deepseek-ai\/dsh-compaction-basic['"]?[ \t]*$/m

/** The installed DSH package's `standard` preset (walking up from DSH's entry script), or null. */
export function shippedPreset(entry = process.argv[1]) {
  if (!entry) return null
  let dir
  try {
    dir = dirname(realpathSync(entry))
  } catch {
    return null
  }
  for (let i = 0; i < 8; i++) {
    const manifest = join(dir, 'package.json')
    if (existsSync(manifest)) {
      try {
        if (JSON.parse(readFileSync(manifest, 'utf8')).name === '@deepseek-ai/dsh') {
          const folder = join(dir, 'config', 'agent-presets', 'standard')
          return existsSync(join(folder, 'agent.cordis.yml')) ? folder : null
        }
      } catch {}
    }
    const up = dirname(dir)
    if (up === dir) break
    dir = up
  }
  return null
}

/** The standard preset's composition with its compaction-basic row swapped for ours, or null if it has none. */
export function presetComposition(standard) {
  if (!STOCK_ROW.test(standard)) return null
  return (
    `# Written by stratagate-py: DSH's standard preset with StrataGate's compaction engine (rewritten when DSH or\n` +
    `# StrataGate changes it; edit a copy under another id instead).\n` +
    standard.replace(STOCK_ROW, `$1'${ENGINE_ROW}'`)
  )
}

export const PRESET_MANIFEST =
  'name: StrataGate\n' +
  "description: DSH's standard coding agent with StrataGate's context engine as its compaction (tool cards, block views and folds; DSH's summary stays the last resort).\n" +
  'order: 0\n'

function writeIfChanged(path, text) {
  if (existsSync(path) && readFileSync(path, 'utf8') === text) return false
  writeFileSync(path, text, { mode: 0o600 })
  chmodSync(path, 0o600)
  return true
}

/**
 * Write (or refresh) the StrataGate preset. Never throws.
 * @returns {{ok: boolean, changed?: boolean, path?: string, error?: string}}
 */
export function writeStrataGatePreset({ env = process.env, entry = process.argv[1] } = {}) {
  try {
    const shipped = shippedPreset(entry)
    if (!shipped) return { ok: false, error: "DSH's standard agent preset was not found next to DSH's entry script" }
    const composition = presetComposition(readFileSync(join(shipped, 'agent.cordis.yml'), 'utf8'))
    if (!composition) return { ok: false, error: "DSH's standard agent preset has no compaction-basic row to replace" }
    const folder = join(dshHome(env), '.agent-presets', PRESET_ID)
    mkdirSync(folder, { recursive: true, mode: 0o700 })
    chmodSync(folder, 0o700)
    const changed = writeIfChanged(join(folder, 'agent.cordis.yml'), composition) | writeIfChanged(join(folder, 'preset.yml'), PRESET_MANIFEST)
    return { ok: true, changed: Boolean(changed), path: folder }
  } catch (error) {
    return { ok: false, error: String(error?.message ?? error) }
  }
}
