import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  eventsOfTurn,
  fitCapture,
  foldTurnEvents,
  latestHumanText,
  parseArguments,
  shouldCapture,
  textOfBlocks,
  TurnCollector,
} from '../../shim-js/fold.js'
import { makeLog, SESSION, SUBAGENT } from './fixtures.mjs'

function feed(collector, session, events) {
  const out = []
  for (const event of events) {
    const turn = collector.accept(session, event)
    if (turn) out.push(turn)
  }
  return out
}

describe('fold: one capture per turn/end', () => {
  const turns = feed(new TurnCollector(), SESSION, makeLog())

  it('emits exactly one record per finished turn', () => {
    assert.equal(turns.length, 2)
    assert.deepEqual(turns.map((t) => t.receipt), ['dsh:session-main:turn:1', 'dsh:session-main:turn:2'])
    assert.ok(turns.every((t) => t.session === 'session-main'))
  })

  it('keeps only the human prompt as user text (no runtime context, injected context or checkpoint)', () => {
    assert.equal(turns[0].user, 'Run the tests please. We use pnpm, not npm.')
    assert.equal(turns[1].user, 'Fix it.')
    for (const t of turns) {
      assert.doesNotMatch(t.user, /runtime context|AGENTS\.md|Summary of the conversation/)
    }
  })

  it('joins the assistant text of every step, without reasoning', () => {
    assert.equal(turns[0].assistant, 'Running the test suite.\n\nThe api user test fails.')
    assert.doesNotMatch(turns[0].assistant, /I should run/)
  })

  it('records every tool call with parsed arguments, its result and the error flag; skips memory_* tools', () => {
    assert.deepEqual(turns[0].tools, [
      { name: 'bash', arguments: { command: 'pnpm test' }, result: 'FAIL api/user.test.ts\n  ✕ creates user', is_error: false, call_id: 'call_bash' },
      { name: 'read', arguments: { path: 'missing.ts' }, result: 'Error: ENOENT: no such file missing.ts', is_error: true, call_id: 'call_read' },
    ])
  })

  it('takes timestamps from the events and the end reason from turn/end', () => {
    assert.equal(turns[0].started_at, '2026-05-01T10:00:00.010Z')
    assert.equal(turns[0].ended_at, '2026-05-01T10:00:00.070Z')
    assert.equal(turns[0].end_reason, 'completed')
  })

  it('stores an aborted turn: partial text, the unfinished call as an error without result', () => {
    const t = turns[1]
    assert.equal(t.end_reason, 'aborted')
    assert.equal(t.assistant, 'Looking at api/user')
    assert.equal(t.tools.length, 1)
    assert.equal(t.tools[0].name, 'edit')
    assert.deepEqual(t.tools[0].arguments, { raw: '{"path":"api/user.ts"' })
    assert.equal(t.tools[0].is_error, true)
    assert.match(t.tools[0].result, /turn ended \(aborted\)/)
  })

  it('prefers the canonical tool value when DSH reported one', () => {
    const canonical = (id) => (id === 'call_bash' ? { value: { exitCode: 1, stdout: 'FAIL' } } : undefined)
    const [t] = feed(new TurnCollector({ canonical }), SESSION, makeLog())
    assert.deepEqual(t.tools[0].result, { exitCode: 1, stdout: 'FAIL' })
    assert.equal(t.tools[1].result, 'Error: ENOENT: no such file missing.ts') // errors keep their text
  })

  it('keeps sessions apart when their events interleave', () => {
    const collector = new TurnCollector()
    const a = makeLog()
    const b = makeLog()
    const other = { id: 'session-other', header: { cwd: '/elsewhere' } }
    const out = []
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      if (a[i]) out.push(collector.accept(SESSION, a[i]))
      if (b[i]) out.push(collector.accept(other, b[i]))
    }
    const done = out.filter(Boolean)
    assert.equal(done.length, 4)
    assert.deepEqual(done.map((t) => t.session).sort(), ['session-main', 'session-main', 'session-other', 'session-other'])
    assert.ok(done.every((t) => t.receipt.startsWith(`dsh:${t.session}:`)))
  })

  it('re-reads a turn from session.events when its start was not observed (plugin loaded mid-turn)', () => {
    const log = makeLog()
    const session = { ...SESSION, events: log }
    const end = log.findIndex((e) => e.type === 'turn/end')
    const collector = new TurnCollector()
    const out = feed(collector, session, log.slice(20, end + 1)) // joined after turn/start
    assert.equal(out.length, 1)
    assert.equal(out[0].user, 'Run the tests please. We use pnpm, not npm.')
    assert.equal(out[0].tools.length, 2)
  })

  it('returns nothing for an empty turn', () => {
    const t = foldTurnEvents(
      [
        { type: 'turn/start', time: 1, data: { turn: 9 } },
        { type: 'turn/end', time: 2, data: { turn: 9, reason: { kind: 'aborted' } } },
      ],
      { session: 's' },
    )
    assert.equal(t, null)
  })
})

describe('fold: subagents and helpers', () => {
  it('skips subagent sessions unless captureSubagents', () => {
    assert.equal(shouldCapture(SESSION, {}), true)
    assert.equal(shouldCapture(SUBAGENT, {}), false)
    assert.equal(shouldCapture(SUBAGENT, { captureSubagents: true }), true)
  })

  it('finds the latest human prompt for recall, ignoring injected messages', () => {
    const log = makeLog()
    assert.equal(latestHumanText(log), 'Fix it.')
    assert.equal(latestHumanText(log.slice(0, 10)), 'Run the tests please. We use pnpm, not npm.')
    assert.equal(latestHumanText([]), '')
    assert.equal(latestHumanText(log, 3), 'Fix')
  })

  it('extracts one turn from a full log', () => {
    const events = eventsOfTurn(makeLog(), 2)
    assert.equal(events[0].type, 'turn/start')
    assert.equal(events.at(-1).type, 'turn/end')
    assert.equal(eventsOfTurn(makeLog(), 7), null)
  })

  it('renders text blocks and nested tool results', () => {
    assert.equal(textOfBlocks([{ type: 'text', text: 'a' }, { type: 'reasoning', text: 'x' }, { type: 'tool-result', content: [{ type: 'text', text: 'b' }] }, { type: 'image' }]), 'a\nb\n[image]')
    assert.deepEqual(parseArguments(''), {})
    assert.deepEqual(parseArguments('{"a":1}'), { a: 1 })
    assert.deepEqual(parseArguments('[1]'), [1])
    assert.deepEqual(parseArguments('nope'), { raw: 'nope' })
  })

  it('cuts oversized captures below the line limit, marking what was cut', () => {
    const big = 'x'.repeat(600_000)
    const params = { session: 's', receipt: 'r', user: 'u', assistant: 'a', tools: [{ name: 'bash', arguments: { c: 1 }, result: big, is_error: false }] }
    assert.equal(fitCapture(params, 10_000_000), params)
    const fitted = fitCapture(params, 100_000)
    assert.ok(Buffer.byteLength(JSON.stringify(fitted)) <= 100_000)
    assert.match(fitted.tools[0].result, /more characters cut by the StrataGate DSH shim/)
    assert.equal(params.tools[0].result.length, 600_000) // the input is not modified
  })
})
