// The shim's transport over what the pinned DSH really sends (tests/fixtures/dsh/, recorded by
// scripts/record-dsh-fixtures.py): the turn buffer, the call ids it attaches canonical values to, the step material
// and the surface the context engine sends. The sidecar's side of the same files: tests/test_dsh_fixtures.py.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { StepInbox } from '../../shim-js/activation.js'
import { collectSurface } from '../../shim-js/context.js'
import { callIdsOf, FORWARDED, stepMaterial, TurnBuffer } from '../../shim-js/turns.js'
import { recorded } from './fixtures.mjs'

const MANIFEST = recorded('manifest.json')
const MAIN = recorded('turns/main.json')
const SURFACE_TYPES = new Set(['user/message', 'assistant/message', 'tool/result'])

/** A session stand-in holding the recorded events at their seqs (the turn file keeps only the forwarded types). */
function sessionOf(turn) {
  const events = []
  for (const event of turn.events) events[event.seq] = event
  const nodes = turn.events.filter((e) => SURFACE_TYPES.has(e.type)).map((e) => e.seq)
  return { id: turn.session, header: { id: turn.session, origin: turn.origin ?? undefined }, events, surface: { nodes } }
}

describe('recorded DSH events through the shim', () => {
  it('buffers the recorded turn whole and names every call for its canonical value', () => {
    const session = sessionOf(MAIN)
    const buffer = new TurnBuffer()
    const turns = MAIN.events.map((e) => buffer.accept(session, e)).filter(Boolean)
    assert.equal(turns.length, 1)
    assert.deepEqual(turns[0], { session: MAIN.session, turn: 1, events: MAIN.events })
    assert.ok(MAIN.events.every((e) => FORWARDED.has(e.type)))
    const ids = callIdsOf(turns[0].events)
    assert.equal(ids.size, MANIFEST.scenarios.length, 'one call per recorded scenario')
    for (const id of Object.keys(MAIN.canonical)) assert.ok(ids.has(id), `canonical value of ${id} has its call`)
  })

  it('keeps the messages DSH claims from the inbox for the step being assembled', () => {
    const session = sessionOf(MAIN)
    const inbox = new StepInbox()
    const { payloads } = recorded('hooks/agent-inbox-claimed.json')
    // The recorded payload names the live agent by its session; the shim reads payload.agent.session.
    for (const payload of payloads) inbox.record({ ...payload, agent: { session } })
    assert.deepEqual(inbox.claimed(session, 1), payloads.map((p) => p.message))
    assert.deepEqual(inbox.claimed(session, 2), [], 'another turn claimed nothing yet')
  })

  it('gives the step material from the current turn', () => {
    const { events, earlier } = stepMaterial(MAIN.events)
    assert.deepEqual(events, MAIN.events)
    assert.deepEqual(earlier, [])
  })

  it('sends the surface without DSH\'s string markers, tool results untouched', () => {
    const session = sessionOf(MAIN)
    const surface = collectSurface(session)
    assert.deepEqual(surface.map((n) => n.seq), session.surface.nodes)
    assert.ok(MAIN.events.some((e) => e.surfaceOp === 'append'), 'DSH marks appended nodes with a string')
    assert.ok(surface.every((n) => n.surfaceOp === undefined && n.sourceEventSeqs === undefined))
    const results = surface.filter((n) => n.type === 'tool/result')
    assert.equal(results.length, MANIFEST.scenarios.length)
    for (const node of results) assert.deepEqual(node.data, session.events[node.seq].data)
  })
})
