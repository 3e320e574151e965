// The chat's StrataGate Memory row (shim-js/activation.js): what the assemble listener takes from
// activation.render_step (note, entries), and how the agent/pre-step listener adds one DSH `catalog` context message
// per turn and per change of ids, never alone at a turn's first step.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { makeAssembleListener, makeMemoryRowListener, MEMORY_ROW_PLUGIN, memoryRowMessage, MemoryRows } from '../../shim-js/activation.js'

const ENTRIES = [
  { name: 'evt_1', description: 'active · “The tests use pnpm.” — matches “pnpm”' },
  { name: 'blk_2', description: 'ready · “Deploy notes” — recent conversation of another session' },
]
const NOTE = 'StrataGate Memory recalled for this step: evt_1, blk_2 (quoted in the runtime context).'

function session(id, turn = 1) {
  return { id, header: { id, cwd: '/work/p' }, events: [{ type: 'turn/start', data: { turn } }] }
}

const human = { id: 'h1', role: 'user', content: [{ type: 'text', text: 'Which package manager?' }], source: { kind: 'user' } }
const enter = (messages) => async () => ({ kind: 'enter', messages })

describe('the StrataGate Memory chat row', () => {
  it('is a plugin-sourced catalog message DSH labels "StrataGate Memory"', () => {
    const message = memoryRowMessage(NOTE, ENTRIES)
    assert.equal(message.role, 'user')
    assert.deepEqual(message.content, [{ type: 'text', text: NOTE }])
    assert.deepEqual(message.source, { kind: 'plugin', plugin: MEMORY_ROW_PLUGIN, form: 'catalog', entries: ENTRIES })
    assert.equal(MEMORY_ROW_PLUGIN, 'StrataGate Memory')
    assert.match(message.id, /^[0-9a-f-]{36}$/)
  })

  it('joins a step that recalled something, once per turn and again when the ids change', async () => {
    const rows = new MemoryRows()
    const listener = makeMemoryRowListener({ rows })
    const s = session('s1', 3)
    rows.offer(s, 3, { note: NOTE, entries: ENTRIES })
    const first = await listener({ agent: { session: s }, turn: 3, step: 1 }, enter([human]))
    assert.equal(first.messages.length, 2)
    assert.equal(first.messages[0], human, 'the step\'s own input first')
    assert.equal(first.messages[1].source.plugin, 'StrataGate Memory')
    assert.deepEqual(first.messages[1].source.entries, ENTRIES)

    rows.offer(s, 3, { note: NOTE, entries: ENTRIES })
    const same = await listener({ agent: { session: s }, turn: 3, step: 2 }, enter([]))
    assert.deepEqual(same.messages, [], 'the same ids in the same turn: no second row')

    rows.offer(s, 3, { note: NOTE, entries: ENTRIES.slice(0, 1) })
    const changed = await listener({ agent: { session: s }, turn: 3, step: 3 }, enter([]))
    assert.equal(changed.messages.length, 1, 'after a tool round a changed recall gets its row')
    assert.deepEqual(changed.messages[0].source.entries.map((e) => e.name), ['evt_1'])

    rows.offer(s, 4, { note: NOTE, entries: ENTRIES.slice(0, 1) })
    const next = await listener({ agent: { session: s }, turn: 4, step: 1 }, enter([human]))
    assert.equal(next.messages.length, 2, 'a new turn shows its recall again')
  })

  it('never starts a step on its own, and shows nothing for an empty recall or another session', async () => {
    const rows = new MemoryRows()
    const listener = makeMemoryRowListener({ rows })
    const s = session('s2')
    rows.offer(s, 1, { note: NOTE, entries: ENTRIES })
    const alone = await listener({ agent: { session: s }, turn: 1, step: 1 }, enter([]))
    assert.deepEqual(alone.messages, [], 'an empty first step ends the turn in DSH: no row may fill it')
    // Not marked as shown: the same recall still shows beside real input.
    rows.offer(s, 1, { note: NOTE, entries: ENTRIES })
    assert.equal((await listener({ agent: { session: s }, turn: 1, step: 1 }, enter([human]))).messages.length, 2)

    rows.offer(s, 2, { note: '', entries: [], text: '' })
    assert.equal((await listener({ agent: { session: s }, turn: 2, step: 1 }, enter([human]))).messages.length, 1)
    rows.offer(s, 2, { note: NOTE, entries: [{ name: '', description: 'x' }, { nope: true }] })
    assert.equal((await listener({ agent: { session: s }, turn: 2, step: 1 }, enter([human]))).messages.length, 1, 'malformed entries are no row')

    rows.offer(s, 3, { note: NOTE, entries: ENTRIES })
    const other = await listener({ agent: { session: session('s3') }, turn: 3, step: 1 }, enter([human]))
    assert.equal(other.messages.length, 1, 'a row belongs to the session that recalled it')
    const rejected = await listener({ agent: { session: s }, turn: 3, step: 1 }, async () => ({ kind: 'reject' }))
    assert.deepEqual(rejected, { kind: 'reject' })
    rows.forget(s)
    assert.equal(rows.take(s), null)
  })

  it('gets its note and list from activation.render_step, asked in the UI language', async () => {
    const rows = new MemoryRows()
    const seen = []
    const assemble = makeAssembleListener({
      namespaceOf: async () => 'proj',
      render: async (params) => {
        seen.push(params)
        return { text: '<stratagate-memory>\nx\n</stratagate-memory>', note: NOTE, entries: ENTRIES }
      },
      available: () => true,
      timeoutMs: () => 1000,
      rows,
      lang: () => 'zh',
    })
    const s = session('s4', 2)
    const out = await assemble({}, { agent: { session: s } }, async () => ({ contexts: [] }))
    assert.equal(out.contexts[0].name, 'stratagate:memory', 'the memory text stays in the runtime context')
    assert.equal(seen[0].lang, 'zh')
    const row = rows.take(s)
    assert.equal(row.message.content[0].text, NOTE)
    assert.deepEqual(row.message.source.entries, ENTRIES)

    // A failed render leaves no row behind from an earlier step.
    rows.offer(s, 2, { note: NOTE, entries: ENTRIES })
    const failing = makeAssembleListener({
      namespaceOf: async () => 'proj',
      render: async () => {
        throw new Error('sidecar down')
      },
      available: () => true,
      timeoutMs: () => 1000,
      rows,
    })
    await failing({}, { agent: { session: s } }, async () => ({ contexts: [] }))
    assert.equal(rows.take(s), null)

    // A render that answers after the deadline: its recall is not in this step's prompt, so no row either.
    let answer
    const late = makeAssembleListener({
      namespaceOf: async () => 'proj',
      render: () => new Promise((resolve) => (answer = resolve)),
      available: () => true,
      timeoutMs: () => 20,
      rows,
    })
    const lateOut = await late({}, { agent: { session: s } }, async () => ({ contexts: [] }))
    assert.deepEqual(lateOut.contexts, [], 'timed out: no memory this step')
    answer({ text: 'M', note: NOTE, entries: ENTRIES })
    await new Promise((resolve) => setImmediate(resolve)) // let the late answer's continuation run
    assert.equal(rows.take(s), null)
  })
})
