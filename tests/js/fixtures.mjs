// A realistic DSH session log, modelled on a real `dsh --profile headless` run (DSH 0.1.0-rc.8): event types,
// envelopes ({type, seq, time, data}) and payload shapes as DSH writes them to session.jsonl.

const T0 = Date.parse('2026-05-01T10:00:00.000Z')

export function makeLog() {
  let seq = 0
  const events = []
  const add = (type, data, at) => {
    const event = { type, seq: seq++, time: T0 + at, data }
    events.push(event)
    return event
  }
  const user = (text) => ({ id: `u-${seq}`, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } })
  const model = { kind: 'model', provider: 'fake', model: 'fake-model' }

  // ---- turn 1: two tool calls (one failing), a memory tool call, injected context, runtime context -------------
  add('permission/preset', { preset: 'workspace-write' }, 0)
  add('turn/start', { turn: 1 }, 10)
  add('agent/inbox/spliced', { target: 'next-turn', start: 0, removedCount: 1, inserted: [] }, 11)
  add('step/start', { turn: 1, step: 1 }, 12)
  add('user/message', user('Run the tests please. We use pnpm, not npm.'), 13)
  add('user/message', {
    id: 'ctx-1',
    role: 'user',
    content: [{ type: 'text', text: 'Current runtime context. This snapshot supersedes earlier runtime-context snapshots.\n\nApproval policy: ask.' }],
    source: { kind: 'plugin', plugin: '@deepseek-ai/dsh-system-prompt', form: 'snapshot', sections: [{ name: 'approval:policy', text: 'Approval policy: ask.' }] },
  }, 14)
  add('user/message', {
    id: 'inj-1',
    role: 'user',
    content: [{ type: 'text', text: 'AGENTS.md in ./api says: always run lint first.' }],
    source: { kind: 'plugin', plugin: '@deepseek-ai/dsh-agent-instructions', form: 'instructions' },
  }, 15)
  add('request/header', { header: { config: { provider: 'fake', model: 'fake-model', maxTokens: 4096 } }, reason: 'initial' }, 16)
  add('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'block-start', index: 0, blockType: 'text' } }, 20)
  add('assistant/message', {
    turn: 1,
    step: 1,
    message: {
      id: 'a-1',
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'I should run the tests.' },
        { type: 'text', text: 'Running the test suite.' },
        { type: 'tool-call', id: 'call_bash', name: 'bash', arguments: '{"command":"pnpm test"}' },
        { type: 'tool-call', id: 'call_mem', name: 'memory_search_raw', arguments: '{"query":"tests"}' },
      ],
      source: model,
    },
    usage: { inputTokens: 10, outputTokens: 5 },
  }, 30)
  add('tool/call', { turn: 1, step: 1, callId: 'call_bash', name: 'bash', arguments: '{"command":"pnpm test"}' }, 31)
  add('tool/call', { turn: 1, step: 1, callId: 'call_mem', name: 'memory_search_raw', arguments: '{"query":"tests"}' }, 32)
  add('session/title', { title: 'Run tests', messageSeqs: [4], source: { kind: 'fallback' } }, 33)
  add('tool/result', {
    turn: 1,
    step: 1,
    message: {
      id: 'r-1',
      role: 'user',
      source: { kind: 'tool', callId: 'call_bash' },
      content: [{ type: 'tool-result', toolCallId: 'call_bash', content: [{ type: 'text', text: 'FAIL api/user.test.ts\n  ✕ creates user' }], isError: false }],
    },
  }, 40)
  add('tool/result', {
    turn: 1,
    step: 1,
    message: {
      id: 'r-2',
      role: 'user',
      source: { kind: 'tool', callId: 'call_mem' },
      content: [{ type: 'tool-result', toolCallId: 'call_mem', content: [{ type: 'text', text: '{"hits": []}' }], isError: false }],
    },
  }, 41)
  add('step/end', { turn: 1, step: 1 }, 42)
  add('step/start', { turn: 1, step: 2 }, 43)
  add('assistant/message', {
    turn: 1,
    step: 2,
    message: { id: 'a-2', role: 'assistant', content: [{ type: 'tool-call', id: 'call_read', name: 'read', arguments: '{"path":"missing.ts"}' }], source: model },
  }, 50)
  add('tool/call', { turn: 1, step: 2, callId: 'call_read', name: 'read', arguments: '{"path":"missing.ts"}' }, 51)
  add('tool/result', {
    turn: 1,
    step: 2,
    message: {
      id: 'r-3',
      role: 'user',
      source: { kind: 'tool', callId: 'call_read' },
      content: [{ type: 'tool-result', toolCallId: 'call_read', content: [{ type: 'text', text: 'Error: ENOENT: no such file missing.ts' }], isError: true }],
    },
    error: { name: 'Error', code: 'ENOENT' },
  }, 52)
  add('step/end', { turn: 1, step: 2 }, 53)
  add('assistant/message', {
    turn: 1,
    step: 3,
    message: { id: 'a-3', role: 'assistant', content: [{ type: 'text', text: 'The api user test fails.' }], source: model },
  }, 60)
  add('turn/end', { turn: 1, reason: { kind: 'completed' } }, 70)

  // ---- turn 2: aborted mid-stream, with a compaction checkpoint and a call that never got a result ----------
  add('turn/start', { turn: 2 }, 100)
  add('user/message', {
    id: 'chk-1',
    role: 'user',
    content: [{ type: 'text', text: 'Summary of the conversation so far: tests fail.' }],
    source: { kind: 'plugin', plugin: 'compact', compactionId: 'cmp-1' },
  }, 101)
  add('user/message', user('Fix it.'), 102)
  add('assistant/message', {
    turn: 2,
    step: 1,
    message: { id: 'a-4', role: 'assistant', content: [{ type: 'text', text: 'Looking at api/user' }], source: model },
    interrupted: true,
  }, 110)
  add('tool/call', { turn: 2, step: 1, callId: 'call_edit', name: 'edit', arguments: '{"path":"api/user.ts"' }, 111)
  add('turn/end', { turn: 2, reason: { kind: 'aborted', reason: { kind: 'user' } } }, 120)
  return events
}

export const SESSION = { id: 'session-main', header: { id: 'session-main', cwd: '/work/proj', createdAt: T0 } }
export const SUBAGENT = { id: 'session-sub', header: { id: 'session-sub', cwd: '/work/proj', origin: 'subagent', delegationDepth: 1 } }
