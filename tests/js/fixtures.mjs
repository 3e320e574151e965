// A realistic DSH session log, modelled on a real `dsh --profile headless` run (DSH 0.1.0-rc.8): event types,
// envelopes ({type, seq, time, data}) and payload shapes as DSH writes them to session.jsonl. Two turns: turn 1
// with two tool calls (one failing), a memory tool call, injected context and a runtime-context snapshot; turn 2
// aborted mid-stream, with a compaction checkpoint and a call that never got a result. The same file feeds the
// sidecar's fold and query tests (tests/test_dsh_adapter.py), which also compare with session-log.expected.json:
// what the removed shim-js/fold.js produced from it (every folded turn, and the query after every event).
// It holds what one recording cannot (an aborted turn, a compaction checkpoint, a memory tool call); its fields are
// checked against the shapes recorded from the pinned DSH (tests/fixtures/dsh/, tests/test_dsh_fixtures.py).
import { readFileSync } from 'node:fs'

const FIXTURE = JSON.parse(readFileSync(new URL('./session-log.json', import.meta.url), 'utf8'))

export function makeLog() {
  return structuredClone(FIXTURE.events)
}

export const SESSION = FIXTURE.session
export const SUBAGENT = FIXTURE.subagent

// DSH's own shapes, recorded from the pinned host by scripts/record-dsh-fixtures.py (tests/fixtures/dsh/README.md).
const RECORDED = new URL('../fixtures/dsh/', import.meta.url)

/** One recorded fixture file (path relative to tests/fixtures/dsh/), parsed. */
export function recorded(name) {
  return JSON.parse(readFileSync(new URL(name, RECORDED), 'utf8'))
}

/**
 * The `data` of one tool round's events in the exact shapes the pinned DSH logs them (the recorded
 * events/assistant-message-tool-call.json, tool-call.json and tool-result.json), with this round's turn, step, call
 * id, tool, arguments (a JSON string, as the model sent it) and result text. Every other field stays as recorded.
 */
export function dshToolRound({ turn, step, callId, name, args = '{}', text = '', isError = false, ids = {} }) {
  const request = structuredClone(recorded('events/assistant-message-tool-call.json').event.data)
  Object.assign(request, { turn, step })
  request.message.content = [{ ...request.message.content[0], id: callId, name, arguments: args }]
  if (ids.request) request.message.id = ids.request
  const call = { ...structuredClone(recorded('events/tool-call.json').event.data), turn, step, callId, name, arguments: args }
  const result = structuredClone(recorded('events/tool-result.json').event.data)
  Object.assign(result, { turn, step })
  result.message.source = { ...result.message.source, callId }
  result.message.content = [{ ...result.message.content[0], toolCallId: callId, content: [{ type: 'text', text }], isError }]
  if (ids.result) result.message.id = ids.result
  return { request, call, result }
}
