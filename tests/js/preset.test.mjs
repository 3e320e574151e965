// The web profile's StrataGate agent preset (shim-js/preset.js): DSH's standard preset with our compaction row.
import assert from 'node:assert/strict'
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { ENGINE_ROW, PRESET_ID, PRESET_MANIFEST, presetComposition, shippedPreset, writeStrataGatePreset } from '../../shim-js/preset.js'
import { tempDir } from './helpers.mjs'

// The shape of DSH 0.1.0-rc.8's config/agent-presets/standard/agent.cordis.yml around its compaction group.
const STANDARD = `- id: tools
  name: '@deepseek-ai/dsh-tool-bash'
- id: compaction
  name: cordis:group
  group: true
  isolate:
    compaction: true
    toolResultPruner: true
  config:
    - id: compaction-basic
      name: '@deepseek-ai/dsh-compaction-basic'

    - id: command-compact
      name: '@deepseek-ai/dsh-command-compact'
`

/** A fake DSH install: <root>/package.json (@deepseek-ai/dsh), lib/bin.js, config/agent-presets/standard. */
function fakeDsh(standard = STANDARD) {
  const root = tempDir()
  writeFileSync(join(root, 'package.json'), JSON.stringify({ name: '@deepseek-ai/dsh' }))
  mkdirSync(join(root, 'lib'))
  writeFileSync(join(root, 'lib', 'bin.js'), '')
  mkdirSync(join(root, 'config', 'agent-presets', 'standard'), { recursive: true })
  writeFileSync(join(root, 'config', 'agent-presets', 'standard', 'agent.cordis.yml'), standard)
  return { root, entry: join(root, 'lib', 'bin.js') }
}

describe('the StrataGate agent preset', () => {
  it('is the standard preset with only the compaction-basic row pointing at our loader row', () => {
    const ours = presetComposition(STANDARD)
    assert.match(ours, new RegExp(`name: '${ENGINE_ROW}'`))
    assert.doesNotMatch(ours, /dsh-compaction-basic'/)
    assert.ok(ours.includes("name: '@deepseek-ai/dsh-command-compact'"), 'the rest is unchanged')
    assert.ok(ours.endsWith(STANDARD.replace("'@deepseek-ai/dsh-compaction-basic'", `'${ENGINE_ROW}'`)))
    assert.equal(presetComposition('- id: x\n  name: y\n'), null, 'no stock row: nothing to write')
  })

  it('finds DSH\'s standard preset from its entry script and writes ours 0600 in a 0700 folder, once', () => {
    const { root, entry } = fakeDsh()
    assert.equal(shippedPreset(entry), join(root, 'config', 'agent-presets', 'standard'))
    const home = tempDir()
    const first = writeStrataGatePreset({ env: { DSH_HOME: home }, entry })
    assert.deepEqual(first, { ok: true, changed: true, path: join(home, '.agent-presets', PRESET_ID) })
    const file = join(first.path, 'agent.cordis.yml')
    assert.equal(readFileSync(file, 'utf8'), presetComposition(STANDARD))
    assert.equal(readFileSync(join(first.path, 'preset.yml'), 'utf8'), PRESET_MANIFEST)
    assert.equal(statSync(file).mode & 0o777, 0o600)
    assert.equal(statSync(first.path).mode & 0o777, 0o700)
    assert.equal(writeStrataGatePreset({ env: { DSH_HOME: home }, entry }).changed, false, 'unchanged text is not rewritten')
  })

  it('says why when DSH\'s preset cannot be found or has no compaction row', () => {
    assert.match(writeStrataGatePreset({ env: { DSH_HOME: tempDir() }, entry: join(tempDir(), 'nowhere.js') }).error, /standard agent preset was not found/)
    const { entry } = fakeDsh('- id: x\n')
    assert.match(writeStrataGatePreset({ env: { DSH_HOME: tempDir() }, entry }).error, /no compaction-basic row/)
  })
})
