// The recall query of a step (fold.js activationQuery / stepHumanText / toolRoundText) and the claimed-inbox
// recorder (activation.js StepInbox), in DSH's real order: at step 0 the new prompt is claimed from the inbox
// (`agent/inbox/claimed`) BEFORE the prompt is assembled and appended to the log only AFTER it.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { makeAssembleListener, queryForStep, StepInbox } from '../../shim-js/activation.js'
import {
  activationQuery,
  currentTurnOf,
  QUERY_HUMAN_MAX,
  QUERY_TOOL_ROUND_MAX,
  stepHumanText,
  toolRoundText,
} from '../../shim-js/fold.js'
import { makeLog, SUBAGENT } from './fixtures.mjs'

const prompt = (text, id = `new-${text.length}`) => ({ id, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } })

/** The log up to and including the event at `index`. */
const upTo = (log, index) => log.slice(0, index + 1)
const indexOf = (log, pred) => log.findIndex(pred)

describe('activation query: the human message of the step', () => {
  const log = makeLog()
  const turn2Start = indexOf(log, (e) => e.type === 'turn/start' && e.data.turn === 2)

  it('at step 0 is the newly claimed prompt, which the log does not hold yet (not the previous prompt)', () => {
    const atAssembly = upTo(log, turn2Start) // DSH logged turn/start; the prompt is claimed, not yet appended
    assert.equal(stepHumanText(atAssembly), 'Run the tests please. We use pnpm, not npm.', 'the old query: previous prompt')
    assert.equal(stepHumanText(atAssembly, [prompt('Fix it.')]), 'Fix it.')
    assert.equal(activationQuery(atAssembly, [prompt('Fix it.')]), 'Fix it.', 'no tool round of turn 1 leaks into turn 2')
  })

  it('at step 0 of a brand-new session is the claimed prompt (the log has no human message at all)', () => {
    const fresh = upTo(log, indexOf(log, (e) => e.type === 'turn/start'))
    assert.equal(activationQuery(fresh, []), '')
    assert.equal(activationQuery(fresh, [prompt('Which port does staging use?')]), 'Which port does staging use?')
  })

  it('ignores claimed messages the log already holds, and claimed non-human input', () => {
    const logged = log.find((e) => e.type === 'user/message' && e.data.source.kind === 'user').data
    const step2 = upTo(log, indexOf(log, (e) => e.type === 'step/start' && e.data.step === 2))
    assert.equal(stepHumanText(step2, [logged]), 'Run the tests please. We use pnpm, not npm.')
    const steer = { id: 'n1', role: 'user', content: [{ type: 'text', text: '[StrataGate memory] assess' }], source: { kind: 'plugin', plugin: 'x' } }
    assert.equal(stepHumanText(step2, [logged, steer]), 'Run the tests please. We use pnpm, not npm.')
    assert.equal(stepHumanText(upTo(log, turn2Start), [steer]), 'Run the tests please. We use pnpm, not npm.')
    // A human message claimed mid-turn (user steering) is the newest human input of its step.
    assert.equal(stepHumanText(step2, [logged, prompt('Use vitest instead.')]), 'Use vitest instead.')
  })

  it('is cut to 4000 characters', () => {
    const long = 'word '.repeat(2000)
    assert.equal(QUERY_HUMAN_MAX, 4000)
    assert.equal(stepHumanText(upTo(log, turn2Start), [prompt(long)]).length, 4000)
  })
})

describe('activation query: the newest tool round of the turn', () => {
  const log = makeLog()
  const step2 = upTo(log, indexOf(log, (e) => e.type === 'step/start' && e.data.turn === 1 && e.data.step === 2))
  const step3 = upTo(log, indexOf(log, (e) => e.type === 'step/end' && e.data.turn === 1 && e.data.step === 2))

  it('is empty at step 0', () => {
    assert.equal(toolRoundText(upTo(log, indexOf(log, (e) => e.type === 'user/message'))), '')
    assert.equal(toolRoundText(upTo(log, indexOf(log, (e) => e.type === 'turn/start' && e.data.turn === 2))), '')
  })

  it('holds the latest calls and results in words: name, argument values, result text; no JSON, no memory tools', () => {
    assert.equal(toolRoundText(step2), 'bash pnpm test FAIL api/user.test.ts ✕ creates user')
    assert.equal(
      activationQuery(step2),
      'Run the tests please. We use pnpm, not npm.\n\nbash pnpm test FAIL api/user.test.ts ✕ creates user',
    )
  })

  it('is only the newest round (step 2 replaced step 1), errors included', () => {
    assert.equal(toolRoundText(step3), 'read missing.ts Error: ENOENT: no such file missing.ts')
  })

  it('is bounded (~2000 characters), every call keeping a share', () => {
    const big = (n) => ({
      type: 'tool/result',
      data: { turn: 1, step: 1, message: { source: { callId: `c${n}` }, content: [{ type: 'tool-result', content: [{ type: 'text', text: `result${n} `.repeat(3000) }] }] } },
    })
    const round = [
      { type: 'turn/start', data: { turn: 1 } },
      { type: 'assistant/message', data: { turn: 1, step: 1, message: { content: [{ type: 'tool-call', id: 'c1' }, { type: 'tool-call', id: 'c2' }] } } },
      { type: 'tool/call', data: { turn: 1, step: 1, callId: 'c1', name: 'bash', arguments: '{"command":"cat a"}' } },
      { type: 'tool/call', data: { turn: 1, step: 1, callId: 'c2', name: 'grep', arguments: '{"pattern":"b"}' } },
      big(1),
      big(2),
    ]
    const text = toolRoundText(round)
    assert.equal(QUERY_TOOL_ROUND_MAX, 2000)
    assert.ok(text.length <= 2000, text.length)
    assert.match(text, /^bash cat a result1/)
    assert.match(text, /\ngrep b result2/)
    const query = activationQuery(round, [prompt('x'.repeat(9000))])
    assert.ok(query.length <= QUERY_HUMAN_MAX + 2 + QUERY_TOOL_ROUND_MAX, query.length)
  })
})

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
    inbox.record({ agent: agentOf(SUBAGENT), message: prompt('sub'), turn: 1 })
    assert.deepEqual(inbox.claimed(SUBAGENT, 1), [])
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
  it('renders step 0 of a turn for the new prompt, later steps for the prompt plus the tool round', async () => {
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
    assert.equal(seen[0].query, 'Fix the api user test.')
    // DSH appends the claimed prompt after assembly; the model calls a tool; step 2 is assembled.
    session.events.push({ type: 'step/start', data: { turn: 2, step: 1 } }, { type: 'user/message', data: fix })
    session.events.push(
      { type: 'assistant/message', data: { turn: 2, step: 1, message: { content: [{ type: 'tool-call', id: 'k1', name: 'bash' }] } } },
      { type: 'tool/call', data: { turn: 2, step: 1, callId: 'k1', name: 'bash', arguments: '{"command":"pnpm test api"}' } },
      { type: 'tool/result', data: { turn: 2, step: 1, message: { source: { callId: 'k1' }, content: [{ type: 'tool-result', content: [{ type: 'text', text: '1 failed' }] }] } } },
      { type: 'step/end', data: { turn: 2, step: 1 } },
    )
    await listener({}, { agent: { session } }, async () => ({ contexts: [] }))
    assert.equal(seen[1].query, 'Fix the api user test.\n\nbash pnpm test api 1 failed')
    assert.equal(queryForStep(session, undefined), seen[1].query, 'without a recorder the log alone gives later steps')
  })
})
