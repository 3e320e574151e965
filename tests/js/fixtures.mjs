// A realistic DSH session log, modelled on a real `dsh --profile headless` run (DSH 0.1.0-rc.8): event types,
// envelopes ({type, seq, time, data}) and payload shapes as DSH writes them to session.jsonl. Two turns: turn 1
// with two tool calls (one failing), a memory tool call, injected context and a runtime-context snapshot; turn 2
// aborted mid-stream, with a compaction checkpoint and a call that never got a result. The same file feeds the
// sidecar's fold and query tests (tests/test_dsh_adapter.py), which also compare with session-log.expected.json:
// what the removed shim-js/fold.js produced from it (every folded turn, and the query after every event).
import { readFileSync } from 'node:fs'

const FIXTURE = JSON.parse(readFileSync(new URL('./session-log.json', import.meta.url), 'utf8'))

export function makeLog() {
  return structuredClone(FIXTURE.events)
}

export const SESSION = FIXTURE.session
export const SUBAGENT = FIXTURE.subagent
