// The step material the shim forwards for recall (the sidecar picks the query from it: tests/test_dsh_adapter.py)
// and the claimed-inbox recorder (activation.js StepInbox), in DSH's real order: at step 0 the new prompt is
// claimed from the inbox (`agent/inbox/claimed`) BEFORE the prompt is assembled and appended to the log only AFTER.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { makeAssembleListener, STEP_STRING_MAX, stepFor, StepInbox } from '../../shim-js/activation.js'
import { currentTurnOf } from '../../shim-js/turns.js'
import { dshToolRound, makeLog, SUBAGENT } from './fixtures.mjs'

const prompt = (text, id = `new-${text.length}`) => ({ id, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } })

describe('StepInbox: the messages DSH claimed for a session turn', () => {
  const agentOf = (session) => ({ session })
  const session = { id: 's1', header: {}, events: [] }

  it('records per session and turn; a new turn starts afresh; other turns and sessions see nothing', () => {
    const inbox = new StepInbox()
    inbox.record({ agent: agentOf(session), message: prompt('one', 'm1'), turn: 1 })
    assert.deepEqual(inbox.claimed(session, 1).map((m) => m.id), ['m1'])
    assert.deepEqual(inbox.claimed(session, 2), [])
    assert.deepEqual(inbox.claimed({ id: 'other' }, 1), [])
    inbox.record({ agent: agentOf(session), message: prompt('two', 'm2'), turn: 2 })
    assert.deepEqual(inbox.claimed(session, 2).map((m) => m.id), ['m2'])
    assert.deepEqual(inbox.claimed(session, 1), [])
    // A subagent's claims are recorded like any session's (whether it gets recall is the sidecar's call) and stay its own.
    inbox.record({ agent: agentOf(SUBAGENT), message: prompt('sub', 'sub-1'), turn: 1 })
    assert.deepEqual(inbox.claimed(SUBAGENT, 1).map((m) => m.id), ['sub-1'])
    assert.deepEqual(inbox.claimed(session, 1), [])
    inbox.forget(session)
    assert.deepEqual(inbox.claimed(session, 2), [])
  })

  it('is bounded in sessions and messages per turn', () => {
    const inbox = new StepInbox({ remember: 2, perTurn: 2 })
    for (const id of ['a', 'b', 'c']) inbox.record({ agent: agentOf({ id }), message: prompt(id, id), turn: 1 })
    assert.deepEqual(inbox.claimed({ id: 'a' }, 1), [])
    assert.equal(inbox.claimed({ id: 'c' }, 1).length, 1)
    for (const id of ['x', 'y', 'z']) inbox.record({ agent: agentOf({ id: 'c' }), message: prompt(id, id), turn: 1 })
    assert.deepEqual(inbox.claimed({ id: 'c' }, 1).map((m) => m.id), ['y', 'z'])
  })
})

describe('assemble listener in DSH order: claim → assemble → append', () => {
  it('forwards the claimed prompt at step 0, and the turn so far at later steps', async () => {
    const full = makeLog()
    const turn2Start = full.findIndex((e) => e.type === 'turn/start' && e.data.turn === 2)
    const session = { id: 'session-main', header: {}, events: full.slice(0, turn2Start + 1) }
    const inbox = new StepInbox()
    const seen = []
    const listener = makeAssembleListener({
      namespaceOf: async () => 'ns',
      render: async (params) => (seen.push(params), { text: '' }),
      available: () => true,
      timeoutMs: () => 500,
      stepInbox: inbox,
    })
    // Step 0 of turn 2: DSH's Inbox.claim() emits agent/inbox/claimed, then assembles; the log lacks the prompt.
    const fix = prompt('Fix the api user test.', 'u-fix')
    inbox.record({ agent: { session }, message: fix, turn: currentTurnOf(session.events) })
    await listener({}, { agent: { session } }, async () => ({ contexts: [] }))
    assert.deepEqual(seen[0].claimed, [fix])
    assert.deepEqual(seen[0].events, [full[turn2Start]])
    assert.deepEqual(seen[0].earlier.map((e) => e.data.id), full.slice(0, turn2Start).filter((e) => e.type === 'user/message').map((e) => e.data.id))
    assert.equal(seen[0].namespace, 'ns')
    assert.equal(seen[0].session, 'session-main')
    // DSH appends the claimed prompt after assembly; the model calls a tool; step 2 is assembled.
    session.events.push({ type: 'step/start', data: { turn: 2, step: 1 } }, { type: 'user/message', data: fix })
    const round = dshToolRound({ turn: 2, step: 1, callId: 'k1', name: 'bash', args: '{"command":"pnpm test api"}', text: '1 failed\n[exit code: 1]' })
    session.events.push(
      { type: 'assistant/message', data: round.request },
      { type: 'tool/call', data: round.call },
      { type: 'tool/result', data: round.result },
      { type: 'step/end', data: { turn: 2, step: 1 } },
    )
    await listener({}, { agent: { session } }, async () => ({ contexts: [] }))
    assert.deepEqual(seen[1].events.map((e) => e.type), ['turn/start', 'user/message', 'assistant/message', 'tool/call', 'tool/result'])
    assert.deepEqual(seen[1].claimed, [fix])
    assert.deepEqual(stepFor(session, undefined).events, seen[1].events, 'without a recorder the log alone gives later steps')
  })

  it('cuts long strings before they cross the pipe', () => {
    const session = { id: 's', header: {}, events: [{ type: 'turn/start', data: { turn: 1 } }, { type: 'tool/result', data: { text: 'y'.repeat(STEP_STRING_MAX * 2) } }] }
    assert.equal(stepFor(session).events[1].data.text.length, STEP_STRING_MAX)
  })
})
