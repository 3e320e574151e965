// What the shim forwards: each turn's raw events at turn/end (the sidecar folds them: tests/test_dsh_adapter.py),
// the step material for recall, and the line-size bound. No memory rules are tested here because none are here.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { captureCall, captureId } from '../../shim-js/capture.js'
import { clipStrings, fitLine } from '../../shim-js/line.js'
import { callIdsOf, currentTurnOf, eventsOfTurn, FORWARDED, sessionOrigin, stepMaterial, TurnBuffer } from '../../shim-js/turns.js'
import { makeLog, SESSION, SUBAGENT } from './fixtures.mjs'

function feed(buffer, session, events) {
  const out = []
  for (const event of events) {
    const turn = buffer.accept(session, event)
    if (turn) out.push(turn)
  }
  return out
}

describe('turn buffer: the raw events of each turn at its turn/end', () => {
  it('returns every event of a turn from turn/start to turn/end, without stream deltas', () => {
    const log = makeLog()
    const turns = feed(new TurnBuffer(), SESSION, log)
    assert.deepEqual(turns.map((t) => [t.session, t.turn]), [['session-main', 1], ['session-main', 2]])
    const expected = eventsOfTurn(log, 1)
    assert.deepEqual(turns[0].events, expected)
    assert.equal(expected[0].type, 'turn/start')
    assert.equal(expected.at(-1).type, 'turn/end')
    assert.deepEqual([...new Set(turns[0].events.map((e) => e.type))].sort(), [...FORWARDED].sort(), 'only the types the sidecar reads')
    assert.ok(!turns[0].events.some((e) => e.type === 'assistant/chunk' || e.type === 'request/header'))
  })

  it('keeps sessions apart when their events interleave', () => {
    const buffer = new TurnBuffer()
    const a = makeLog()
    const b = makeLog()
    const other = { id: 'session-other', header: { cwd: '/elsewhere' } }
    const out = []
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      if (a[i]) out.push(buffer.accept(SESSION, a[i]))
      if (b[i]) out.push(buffer.accept(other, b[i]))
    }
    const done = out.filter(Boolean)
    assert.deepEqual(done.map((t) => t.session).sort(), ['session-main', 'session-main', 'session-other', 'session-other'])
  })

  it('re-reads a turn from session.events when its start was not observed (plugin loaded mid-turn)', () => {
    const log = makeLog()
    const end = log.findIndex((e) => e.type === 'turn/end')
    const out = feed(new TurnBuffer(), { ...SESSION, events: log }, log.slice(20, end + 1))
    assert.equal(out.length, 1)
    assert.deepEqual(out[0].events, eventsOfTurn(log, 1))
  })

  it('names the session origin and the call ids (for the canonical values)', () => {
    assert.equal(sessionOrigin(SUBAGENT), 'subagent')
    assert.equal(sessionOrigin(SESSION), null)
    assert.deepEqual([...callIdsOf(eventsOfTurn(makeLog(), 1))], ['call_bash', 'call_mem', 'call_read'])
  })
})

describe('capture calls', () => {
  it('send raw events with turn.capture_raw; an earlier version\'s folded record with turn.capture', () => {
    const raw = { session: 's', turn: 3, events: [{ type: 'turn/start', data: { turn: 3 } }], canonical: {}, origin: null, capture_subagents: false }
    assert.deepEqual(captureCall({ resolve: {}, raw }, 'ns', {}), {
      method: 'turn.capture_raw',
      params: { namespace: 'ns', session: 's', events: raw.events, canonical: {}, origin: null, capture_subagents: false },
    })
    const params = { session: 's', receipt: 'dsh:s:turn:1', user: 'u', assistant: '', tools: [] }
    assert.deepEqual(captureCall({ resolve: {}, params }, 'ns', {}), { method: 'turn.capture', params: { namespace: 'ns', ...params } })
  })

  it('send a disposed session\'s close with session.close, spooled under its own id', () => {
    const rec = { resolve: { mode: 'project', session: 's' }, close: { session: 's' } }
    assert.deepEqual(captureCall(rec, 'ns', {}), { method: 'session.close', params: { namespace: 'ns', session: 's' } })
    const turn = { resolve: rec.resolve, raw: { session: 's', turn: 1, events: [] } }
    assert.match(captureId(rec), /^s#close\|/)
    assert.notEqual(captureId(rec), captureId(turn))
  })

  it('stay below the sidecar line limit, cutting the longest strings with a marker', () => {
    const big = { events: [{ type: 'tool/result', data: { text: 'x'.repeat(600_000), small: 'keep' } }] }
    assert.equal(fitLine(big, 10_000_000), big)
    const fitted = fitLine(big, 100_000)
    assert.ok(Buffer.byteLength(JSON.stringify(fitted)) <= 100_000)
    assert.match(fitted.events[0].data.text, /more characters cut by the StrataGate DSH shim/)
    assert.equal(fitted.events[0].data.small, 'keep')
    assert.equal(big.events[0].data.text.length, 600_000, 'the input is not modified')
    const { params } = captureCall({ resolve: {}, raw: { session: 's', turn: 1, ...big } }, 'ns', { STRATAGATE_MAX_LINE_BYTES: '65536' })
    assert.ok(Buffer.byteLength(JSON.stringify(params)) <= 65536 - 4096)
  })
})

describe('step material for recall', () => {
  it('is the log from the current turn start plus the user messages before it', () => {
    const log = makeLog()
    const turn2 = log.findIndex((e) => e.type === 'turn/start' && e.data.turn === 2)
    const { events, earlier } = stepMaterial(log.slice(0, turn2 + 2))
    assert.deepEqual(events.map((e) => e.type), ['turn/start', 'user/message'])
    assert.deepEqual(stepMaterial([...log.slice(0, turn2 + 1), { type: 'step/start', data: {} }]).events.map((e) => e.type), ['turn/start'])
    assert.ok(earlier.every((e) => e.type === 'user/message'))
    assert.equal(earlier.length, 3)
    assert.equal(currentTurnOf(log), 2)
    assert.deepEqual(stepMaterial(undefined), { events: [], earlier: [] })
  })

  it('cuts long strings (the sidecar reads only a prefix of each)', () => {
    assert.deepEqual(clipStrings({ a: ['x'.repeat(10)], n: 1 }, 4), { a: ['xxxx'], n: 1 })
  })
})
