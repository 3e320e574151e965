// Lands a context plan (cards, a fold, a block, a bad op) with shim-js/context.js on DSH's REAL Session class, with
// DSH's real compaction seam (checkpoint source, tool-pairing checks) and with DSH's own invariant checkers for the
// session log and the compaction brackets (dsh-session/invariant, dsh-compaction/invariant) watching every append.
// Run by tests/e2e/test_e2e_context_smoke.py with DSH's node: `node context-session-check.mjs <dsh package.json>`.
// Prints one JSON report on stdout; exits 1 with the reason on any violation.
import { fileURLToPath, pathToFileURL } from 'node:url'
import { dirname, join } from 'node:path'
import { createRequire } from 'node:module'
import { realpathSync } from 'node:fs'

const here = dirname(fileURLToPath(import.meta.url))
const shim = (name) => import(pathToFileURL(join(here, '..', '..', 'shim-js', name)).href)
const { applyOps, compactionOpen } = await shim('context.js')
const { importDsh } = await shim('dsh-import.js')

const entry = process.argv[2]
const dsh = (name) => importDsh(name, { entry, load: (s) => import(s) })
// The checkers live at the packages' `./invariant` subpaths, next to their roots.
const sub = async (name, path) => {
  const anchor = realpathSync(createRequire(realpathSync(entry)).resolve('@deepseek-ai/dsh-compaction-basic'))
  return import(pathToFileURL(join(dirname(createRequire(anchor).resolve(name)), path)).href)
}
const { Session } = await dsh('@deepseek-ai/dsh-session')
const seamModule = await dsh('@deepseek-ai/dsh-compaction')
const { createAssistantMessage, createToolResultMessage, createUserMessage } = await dsh('@deepseek-ai/dsh-llm')
const sessionInvariant = await sub('@deepseek-ai/dsh-session', 'invariant.js')
const compactionInvariant = await sub('@deepseek-ai/dsh-compaction', 'invariant.js')

// Install both checkers against a stand-in Cordis context and feed them every event (pre-commit + post-commit).
const failures = []
const listeners = { 'internal/dispatch': [], 'session/event': [], 'session/created': [] }
const checkerCtx = {
  sessions: { list: () => [] },
  on: (name, fn) => listeners[name]?.push(fn),
}
const register = async (mod) => {
  let installer
  await mod.apply({ invariants: { register: (_pkg, install) => (installer = install) } })
  installer(checkerCtx, (message) => {
    failures.push(message)
    throw new Error(`invariant: ${message}`)
  })
}
await register(sessionInvariant)
await register(compactionInvariant)

const session = Session.create('session-check')
const realAppend = session.append.bind(session)
session.append = (type, data, ...opts) => {
  // A detached session publishes nothing, so hand the checkers each accepted event as DSH's dispatch would:
  // the validation pass (internal/dispatch) and then the publication (session/event), with the same object.
  const event = realAppend(type, data, ...opts)
  for (const fn of listeners['internal/dispatch']) fn('emit', 'session/event', [session, event])
  for (const fn of listeners['session/event']) fn(session, event)
  return event
}
for (const fn of listeners['session/created']) fn(session)

// Turn 1: a user message, four tool rounds (read), a final answer. Turn 2 open with a new prompt.
const big = (i) => `line of build log ${i}\n`.repeat(300)
session.append('turn/start', { turn: 1 })
const user = session.append('user/message', createUserMessage({ content: [{ type: 'text', text: 'check the logs' }], source: { kind: 'user' } }), { surfaceOp: 'append' }).seq
const rounds = []
for (let step = 1; step <= 4; step++) {
  session.append('step/start', { turn: 1, step })
  const callId = `call_${step}`
  const call = session.append(
    'assistant/message',
    { turn: 1, step, message: createAssistantMessage({ content: [{ type: 'tool-call', id: callId, name: 'read', arguments: { file_path: `/w/log${step}` } }], source: { provider: 'p', model: 'm' } }), usage: { inputTokens: 10, outputTokens: 2, cacheReadTokens: 100 } },
    { surfaceOp: 'append', sourceEventSeqs: [] },
  ).seq
  session.append('tool/call', { turn: 1, step, callId, name: 'read', arguments: JSON.stringify({ file_path: `/w/log${step}` }) })
  const result = session.append('tool/result', { turn: 1, step, message: createToolResultMessage({ callId, content: [{ type: 'text', text: big(step) }], isError: false }) }, { surfaceOp: 'append' }).seq
  session.append('step/end', { turn: 1, step })
  rounds.push({ call, result })
}
session.append('step/start', { turn: 1, step: 5 })
const final = session.append('assistant/message', { turn: 1, step: 5, message: createAssistantMessage({ content: [{ type: 'text', text: 'done' }], source: { provider: 'p', model: 'm' } }) }, { surfaceOp: 'append', sourceEventSeqs: [] }).seq
session.append('step/end', { turn: 1, step: 5 })
session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
session.append('turn/start', { turn: 2 })
session.append('user/message', createUserMessage({ content: [{ type: 'text', text: 'now the tests' }], source: { kind: 'user' } }), { surfaceOp: 'append' })

const seam = { ok: true, compactCheckpointSource: seamModule.compactCheckpointSource, CompactionId: seamModule.CompactionId, balancedBefore: seamModule.toolPairingBalancedBefore, balancedAfter: seamModule.toolPairingBalancedAfter }
const tag = (kind, ref) => `[stratagate:${kind} id=${ref} · older context, not an instruction · decompress("${ref}") restores the original]`
const ops = [
  { ref: 'c1', kind: 'card', tier: 0, auto: false, start: rounds[2].result, end: rounds[2].result, text: `${tag('card', 'c1')}\nread /w/log3`, tokens: 20, shadowed_tokens: 1500 },
  { ref: 'f2', kind: 'fold', tier: 1, auto: true, start: user, end: rounds[0].result, text: `${tag('fold:t1', 'f2')}\nread log1`, tokens: 30, shadowed_tokens: 1600 },
  { ref: 'blk_3', kind: 'block', tier: 0, auto: false, start: rounds[1].call, end: rounds[1].result, text: `${tag('block', 'blk_3')}\nL4 view`, tokens: 30, shadowed_tokens: 1550 },
  { ref: 'f9', kind: 'fold', tier: 1, auto: false, start: rounds[3].call, end: rounds[3].call, text: `${tag('fold:t1', 'f9')}\nsplits a round`, tokens: 5, shadowed_tokens: 10 },
]
const before = session.surface.nodes.length
const out = await applyOps(session, ops, { seam, turn: 2 })
// Turn 2 ends; then `/compact` (between turns: `turn: null`, the command id) folds the block checkpoint and the card.
session.append('step/start', { turn: 2, step: 1 })
session.append('assistant/message', { turn: 2, step: 1, message: createAssistantMessage({ content: [{ type: 'text', text: 'ok' }], source: { provider: 'p', model: 'm' } }) }, { surfaceOp: 'append', sourceEventSeqs: [] })
session.append('step/end', { turn: 2, step: 1 })
session.append('turn/end', { turn: 2, reason: { kind: 'completed' } })
const blockSeq = out.landed.find((e) => e.ref === 'blk_3').replacement_seq
const cardSeq = out.landed.find((e) => e.ref === 'c1').replacement_seq
const manual = await applyOps(
  session,
  [
    { ref: 'f10', kind: 'fold', tier: 2, auto: false, start: blockSeq, end: cardSeq, text: `${tag('fold:t2', 'f10')}\nblock + card`, tokens: 10, shadowed_tokens: 100 },
    { ref: 'c11', kind: 'card', tier: 0, auto: false, start: rounds[3].result, end: rounds[3].result, text: 'no card between turns', tokens: 5, shadowed_tokens: 50 },
  ],
  { seam, turn: null, sourceCommandId: 'cmd-test-1' },
)
// The next request's history, as DSH derives it.
const derived = session.deriveMessages().map((m) => ({ role: m.role, text: (m.content ?? []).map((b) => b.text ?? (b.content ?? []).map((c) => c.text).join('')).join('') }))
const report = {
  landed: out.landed,
  manual: manual.landed,
  failures,
  open: compactionOpen(session),
  surfaceBefore: before,
  surfaceAfter: session.surface.nodes.length,
  types: session.events.slice(-14).map((e) => e.type),
  derived: derived.map((m) => `${m.role}: ${m.text.slice(0, 60)}`),
  final,
}
process.stdout.write(`${JSON.stringify(report)}\n`)
process.exit(failures.length ? 1 : 0)
