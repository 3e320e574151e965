// The shim's half of the context engine (shim-js/context.js and the compaction loader) on a session stand-in that
// follows DSH 0.1.0-rc.8's append rules (dsh-session `planSurfaceEvent`: surface markers, positional replacement,
// complete shadowed-node provenance, tool/result rewrites of content only) and records every append.
// The sidecar side of context.plan is tested in Python; here the sidecar is a recording stub.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { makeEngineClass } from '../../shim-js/compaction-engine-class.js'
import { loadEngine } from '../../shim-js/compaction-loader.js'
import { importDsh } from '../../shim-js/dsh-import.js'
import { sidecarEnv, normalizeConfig } from '../../shim-js/config.js'
import {
  applyOps,
  backToFront,
  collectSurface,
  compactionOpen,
  compactionResultOf,
  ContextEngine,
  currentContextEngine,
  latestUsage,
  makeModelOf,
  openTurnOf,
  setContextEngine,
} from '../../shim-js/context.js'
import { memoryCommand, uiLanguage } from '../../shim-js/memory-command.js'
import { dshToolRound } from './fixtures.mjs'
import { quietLog, tempDir } from './helpers.mjs'

const SURFACE_TYPES = new Set(['user/message', 'assistant/message', 'tool/result'])
const clone = (value) => {
  const text = JSON.stringify(value, (key, v) => {
    if (v === undefined) throw new Error(`non-JSON value at ${key}`)
    return v
  })
  return JSON.parse(text)
}

/** A DSH Session stand-in: the log, the surface fold and the append validation DSH applies. */
class FakeSession {
  constructor(id = 'session-1') {
    this.id = id
    this.header = { id, cwd: '/work/p' }
    this.log = []
    this.nodes = []
    this.replaceGeneration = 0
    this.appended = []
    this.failOn = null
  }
  get events() {
    return this.log
  }
  get seq() {
    return this.log.length
  }
  get surface() {
    return { nodes: [...this.nodes], replaceGeneration: this.replaceGeneration }
  }
  requestHeader() {
    return { config: { provider: 'fake', model: 'fake-model', maxTokens: 4096 } }
  }
  append(type, data, opts = {}) {
    if (this.failOn?.(type, data)) throw new Error(`refused ${type}`)
    const event = { type, seq: this.log.length, time: 0, data: clone(data) }
    if (opts.sourceEventSeqs !== undefined) event.sourceEventSeqs = [...opts.sourceEventSeqs]
    if (opts.surfaceOp !== undefined) event.surfaceOp = clone(opts.surfaceOp)
    let plan = null
    if (SURFACE_TYPES.has(type)) {
      if (event.surfaceOp === undefined) throw new Error(`${type} requires a surfaceOp`)
      if (event.surfaceOp === 'append') plan = { kind: 'append' }
      else {
        const { op, start, end } = event.surfaceOp
        assert.equal(op, 'replace')
        const startIdx = this.nodes.indexOf(start)
        const endIdx = this.nodes.indexOf(end)
        if (startIdx < 0 || endIdx < 0 || startIdx > endIdx) throw new Error(`surface replace: bad range ${start}-${end}`)
        const shadowed = this.nodes.slice(startIdx, endIdx + 1)
        const missing = shadowed.filter((seq) => !(event.sourceEventSeqs ?? []).includes(seq))
        if (missing.length) throw new Error(`surface replace: sourceEventSeqs missing ${missing}`)
        if (type === 'tool/result') {
          assert.equal(shadowed.length, 1, 'a tool/result replaces one node')
          const original = this.log[start]
          const strip = (d) => ({ ...d, message: { ...d.message, content: [{ ...d.message.content[0], content: null }] } })
          assert.deepEqual(strip(event.data), strip(original.data), 'tool/result surface replacement may change only content')
        }
        plan = { kind: 'replace', startIdx, endIdx }
      }
    } else if (event.surfaceOp !== undefined) throw new Error(`${type} cannot carry surfaceOp`)
    this.log.push(event)
    if (plan?.kind === 'append') this.nodes.push(event.seq)
    if (plan?.kind === 'replace') {
      this.nodes.splice(plan.startIdx, plan.endIdx - plan.startIdx + 1, event.seq)
      this.replaceGeneration += 1
    }
    this.appended.push(event)
    return event
  }
}

const text = (t) => [{ type: 'text', text: t }]

/** A session with `rounds` finished tool rounds in turn 1, and turn 2 open. Returns seqs by role. */
function buildSession({ rounds = 3, openTurn = 2 } = {}) {
  const s = new FakeSession()
  const seqs = { rounds: [] }
  s.append('turn/start', { turn: 1 })
  seqs.user = s.append('user/message', { id: 'u1', role: 'user', content: text('fix the build'), source: { kind: 'user' } }, { surfaceOp: 'append' }).seq
  for (let i = 0; i < rounds; i++) {
    // The round in DSH's recorded shapes (tests/fixtures/dsh/events/), with this test's ids, command, output and usage.
    const round = dshToolRound({ turn: 1, step: i, callId: `call_${i}`, name: 'bash', args: '{"command":"make"}', text: `output ${i}\n`.repeat(50), ids: { request: `a${i}`, result: `r${i}` } })
    round.request.usage = { inputTokens: 100 + i, outputTokens: 5, cacheReadTokens: 900 }
    const call = s.append('assistant/message', round.request, { surfaceOp: 'append', sourceEventSeqs: [] }).seq
    const result = s.append('tool/result', round.result, { surfaceOp: 'append' }).seq
    seqs.rounds.push({ call, result })
  }
  seqs.final = s.append('assistant/message', { turn: 1, step: rounds, message: { id: 'af', role: 'assistant', content: text('done') } }, { surfaceOp: 'append', sourceEventSeqs: [] }).seq
  s.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
  if (openTurn) {
    s.append('turn/start', { turn: openTurn })
    seqs.user2 = s.append('user/message', { id: 'u2', role: 'user', content: text('and the tests'), source: { kind: 'user' } }, { surfaceOp: 'append' }).seq
  }
  s.appended = []
  return { session: s, seqs }
}

/** A compaction seam stand-in with DSH's checkpoint source shape (dsh-compaction `compactCheckpointSource`). */
const seam = {
  ok: true,
  CompactionId: (id) => id,
  compactCheckpointSource: (compactionId, sourceCommandId) => ({ kind: 'plugin', plugin: 'compact', compactionId, ...(sourceCommandId === undefined ? {} : { sourceCommandId }) }),
}

const card = (ref, seq, extra = {}) => ({ ref, kind: 'card', tier: 0, auto: false, start: seq, end: seq, text: `[stratagate:card id=${ref} · older context, not an instruction · decompress("${ref}") restores the original]\nbash make`, tokens: 30, shadowed_tokens: 400, ...extra })
const fold = (ref, start, end, extra = {}) => ({ ref, kind: 'fold', tier: 1, auto: true, start, end, text: `[stratagate:fold:t1 id=${ref} auto=1 · written by StrataGate, not the model]\nrounds 0-1`, tokens: 50, shadowed_tokens: 900, ...extra })

describe('surface collection', () => {
  it('sends every surface node, data only above archived_through, and only replacement markers', () => {
    const { session, seqs } = buildSession()
    const all = collectSurface(session)
    assert.deepEqual(all.map((n) => n.seq), session.surface.nodes)
    assert.ok(all.every((n) => n.data !== undefined && n.surfaceOp === undefined), 'append markers are not forwarded')
    const later = collectSurface(session, seqs.rounds[1].result)
    for (const node of later) assert.equal('data' in node, node.seq > seqs.rounds[1].result, `seq ${node.seq}`)
    // A landed card shows up as a replacement node with its marker and provenance.
    session.append('tool/result', { ...session.events[seqs.rounds[0].result].data }, { surfaceOp: { op: 'replace', start: seqs.rounds[0].result, end: seqs.rounds[0].result }, sourceEventSeqs: [seqs.rounds[0].result] })
    const replaced = collectSurface(session, 10_000).find((n) => n.surfaceOp)
    assert.deepEqual(replaced.surfaceOp, { op: 'replace', start: seqs.rounds[0].result, end: seqs.rounds[0].result })
    assert.deepEqual(replaced.sourceEventSeqs, [seqs.rounds[0].result])
    assert.equal(replaced.data, undefined)
  })

  it('reads the latest provider usage (disjoint DSH counts summed) and the request count', () => {
    const { session } = buildSession({ rounds: 2 })
    assert.deepEqual(latestUsage(session), { prompt_tokens: 101 + 900, cached_tokens: 900, requests: 3 })
    assert.equal(latestUsage(new FakeSession()), null)
  })

  it('knows the open turn and an open compaction bracket from the log', () => {
    const { session } = buildSession()
    assert.equal(openTurnOf(session), 2)
    assert.equal(openTurnOf(buildSession({ openTurn: 0 }).session), null)
    assert.equal(compactionOpen(session), false)
    session.append('compaction/start', { compactionId: 'x', turn: 2 })
    assert.equal(compactionOpen(session), true)
    session.append('session/end-seed', {})
    assert.equal(compactionOpen(session), false, 'a start before a seed boundary is stale')
  })

  it('resolves the window from the routed model, the output cap and the meter overhead', async () => {
    const { session } = buildSession()
    const asked = []
    const modelOf = makeModelOf({
      llm: () => ({ resolveModelInfo: async (provider, model) => (asked.push(`${provider}/${model}`), { context: { contextWindow: 64_000 } }) }),
      tokenMeter: () => ({ measure: () => ({ totalTokens: 9000, surfaceTokens: 3000 }) }),
    })
    assert.deepEqual(await modelOf(session), { window: 64_000, max_tokens: 4096, overhead_tokens: 6000 })
    assert.deepEqual(asked, ['fake/fake-model'])
    const unrouted = { requestHeader: () => undefined }
    const fallback = makeModelOf({ llm: () => ({ resolveModelInfo: async (p, m) => ({ context: { contextWindow: p === 'd' && m === 'dm' ? 1000 : 0 } }) }), defaultModel: () => ({ currentSelection: () => ({ provider: 'd', model: 'dm' }) }) })
    assert.equal((await fallback(unrouted)).window, 1000)
    const unknown = makeModelOf({ llm: () => ({ resolveModelInfo: async () => ({}) }) })
    assert.equal(await unknown(session), null, 'no plan without a window')
  })
})

describe('applying a plan', () => {
  it('lands cards like the tool-result pruner and folds as a compaction bracket, back to front', async () => {
    const { session, seqs } = buildSession()
    const [r0, r1, r2] = seqs.rounds
    const ops = [fold('f1', seqs.user, r1.result), card('c3', r2.result)]
    assert.deepEqual(backToFront(ops, session.surface.nodes).map((o) => o.ref), ['c3', 'f1'])
    const out = await applyOps(session, ops, { seam })
    assert.deepEqual(
      session.appended.map((e) => e.type),
      ['compaction/prune', 'tool/result', 'compaction/start', 'compaction/summary', 'user/message', 'compaction/end'],
      'the later span first',
    )
    const [prune, result, start, summary, checkpoint, end] = session.appended
    assert.deepEqual(prune.data, { shadowedRange: { start: r2.result, end: r2.result }, shadowedSeqs: [r2.result], shadowedTokenCount: 400 })
    assert.deepEqual(result.surfaceOp, { op: 'replace', start: r2.result, end: r2.result })
    assert.deepEqual(result.sourceEventSeqs, [r2.result])
    assert.deepEqual(result.data.message.content[0].content, text(card('c3', r2.result).text))
    assert.equal(result.data.message.content[0].toolCallId, 'call_2', 'everything but the content is kept')
    assert.deepEqual(start.data, { compactionId: start.data.compactionId, turn: 2 })
    assert.equal(summary.data.compactionId, start.data.compactionId)
    assert.deepEqual(summary.data.shadowedRange, { start: seqs.user, end: r1.result })
    assert.deepEqual(summary.data.shadowedSeqs, [seqs.user, r0.call, r0.result, r1.call, r1.result])
    assert.equal(summary.data.shadowedTokenCount, 900)
    assert.deepEqual(checkpoint.data.source, { kind: 'plugin', plugin: 'compact', compactionId: start.data.compactionId })
    assert.deepEqual(checkpoint.data.content, text(fold('f1', 0, 0).text))
    assert.deepEqual(checkpoint.surfaceOp, { op: 'replace', start: seqs.user, end: r1.result })
    assert.deepEqual(checkpoint.sourceEventSeqs, [start.seq, summary.seq, seqs.user, r0.call, r0.result, r1.call, r1.result])
    assert.deepEqual(end.data, start.data)
    assert.deepEqual(out.landed, [{ ref: 'c3', replacement_seq: result.seq }, { ref: 'f1', replacement_seq: checkpoint.seq }])
    assert.deepEqual(session.surface.nodes, [checkpoint.seq, r2.call, result.seq, seqs.final, seqs.user2])
    assert.equal(compactionOpen(session), false)
    const summaryOf = compactionResultOf(out)
    assert.equal(summaryOf.shadowedTokenCount, 1300)
    assert.equal(summaryOf.summarySeq, summary.seq)
    assert.deepEqual(summaryOf.shadowedRange, { start: seqs.user, end: r2.result })
  })

  it('prices what it shadows with DSH\'s token meter (the figure DSH\'s context projections subtract)', async () => {
    const { session, seqs } = buildSession()
    const [r0, r1, r2] = seqs.rounds
    const meter = {
      estimateMessage: (message) => JSON.stringify(message).length,
      measure: (s) => ({ nodes: s.surface.nodes.map((seq) => ({ seq, tokens: seq * 10 })) }),
    }
    const out = await applyOps(session, [fold('f1', seqs.user, r1.result), card('c3', r2.result)], { seam, meter })
    const prune = session.appended.find((e) => e.type === 'compaction/prune')
    const summary = session.appended.find((e) => e.type === 'compaction/summary')
    assert.equal(prune.data.shadowedTokenCount, JSON.stringify(session.events[r2.result].data.message).length, 'as the tool-result pruner')
    assert.equal(summary.data.shadowedTokenCount, [seqs.user, r0.call, r0.result, r1.call, r1.result].reduce((t, seq) => t + seq * 10, 0), 'as compaction-basic')
    assert.equal(compactionResultOf(out).shadowedTokenCount, prune.data.shadowedTokenCount + summary.data.shadowedTokenCount)
    // Each price is the event right before its replacement (DSH's fold arms a claim for the very next event).
    for (const price of [prune, summary]) {
      const next = session.appended[session.appended.indexOf(price) + 1]
      assert.deepEqual(next.surfaceOp, { op: 'replace', start: price.data.shadowedRange.start, end: price.data.shadowedRange.end })
    }
  })

  it('closes the bracket with an error when an append fails, and still lands the other ops', async () => {
    const { session, seqs } = buildSession()
    session.failOn = (type) => type === 'user/message'
    const out = await applyOps(session, [fold('f1', seqs.user, seqs.rounds[0].result), card('c3', seqs.rounds[2].result)], { seam })
    assert.deepEqual(session.appended.map((e) => e.type), ['compaction/prune', 'tool/result', 'compaction/start', 'compaction/summary', 'compaction/end'])
    const end = session.appended.at(-1)
    assert.equal(end.data.compactionId, session.appended[2].data.compactionId)
    assert.match(end.data.error, /refused user\/message/)
    assert.equal(compactionOpen(session), false, 'never a half bracket')
    assert.deepEqual(out.landed[0], { ref: 'c3', replacement_seq: session.appended[1].seq })
    assert.deepEqual(out.landed[1].ref, 'f1')
    assert.match(out.landed[1].error, /refused user\/message/)
  })

  it('refuses a bad op before opening any bracket', async () => {
    const { session, seqs } = buildSession()
    const out = await applyOps(
      session,
      [
        fold('f1', seqs.rounds[1].result, seqs.user), // reversed
        fold('f2', 9999, seqs.user), // not on the surface
        card('c1', seqs.rounds[0].call), // not a tool result
        { ...card('c2', seqs.rounds[0].result), end: seqs.rounds[1].result }, // a card is one node
        { ...card('c9', seqs.rounds[0].result), kind: 'bogus' },
      ],
      { seam: { ...seam, balancedBefore: () => true, balancedAfter: () => true } },
    )
    assert.deepEqual(session.appended, [])
    assert.equal(out.landed.length, 5)
    assert.ok(out.landed.every((entry) => entry.error && entry.replacement_seq === undefined), JSON.stringify(out.landed))
    assert.equal(compactionResultOf(out), null)
  })

  it('never splits a tool round: the seam\'s pairing checks gate a span', async () => {
    const { session, seqs } = buildSession()
    const unbalanced = { ...seam, balancedBefore: () => true, balancedAfter: (_s, seq) => seq !== seqs.rounds[0].call }
    const out = await applyOps(session, [fold('f1', seqs.user, seqs.rounds[0].call)], { seam: unbalanced })
    assert.match(out.landed[0].error, /split a tool call/)
    assert.deepEqual(session.appended, [])
  })

  it('without the DSH compaction seam, cards land and spans fail with the reason', async () => {
    const { session, seqs } = buildSession()
    const out = await applyOps(session, [fold('f1', seqs.user, seqs.rounds[0].result), card('c3', seqs.rounds[2].result)], { seam: { ok: false, error: 'cannot import @deepseek-ai/dsh-compaction' } })
    assert.equal(out.landed.find((e) => e.ref === 'c3').replacement_seq, session.appended[1].seq)
    assert.match(out.landed.find((e) => e.ref === 'f1').error, /cannot import/)
    assert.deepEqual(session.appended.map((e) => e.type), ['compaction/prune', 'tool/result'])
  })

  it('brackets a manual (/compact) landing between turns with turn null and the command id', async () => {
    const { session, seqs } = buildSession({ openTurn: 0 })
    const out = await applyOps(session, [fold('f1', seqs.user, seqs.rounds[0].result), card('c3', seqs.rounds[2].result)], { seam, turn: null, sourceCommandId: 'cmd-1' })
    assert.match(out.landed.find((e) => e.ref === 'c3').error, /only be replaced within an open turn/, 'DSH refuses tool/result replacements between turns')
    const [start, summary, checkpoint, end] = session.appended
    assert.equal(session.appended.length, 4)
    assert.deepEqual(start.data, { compactionId: start.data.compactionId, sourceCommandId: 'cmd-1', turn: null })
    assert.equal(summary.data.sourceCommandId, 'cmd-1')
    assert.equal(checkpoint.data.source.sourceCommandId, 'cmd-1')
    assert.deepEqual(end.data, start.data)
  })
})

/** A recording sidecar stub: `reply(method, params)` decides each answer. */
function stubSidecar(reply) {
  const calls = []
  return {
    calls,
    call: (method, params, options) => {
      calls.push({ method, params, options })
      return Promise.resolve().then(() => reply(method, params))
    },
  }
}

function engineWith(call, extra = {}) {
  return new ContextEngine({
    call,
    namespaceOf: async () => 'ns-1',
    modelOf: async () => ({ window: 64_000, max_tokens: 4096, overhead_tokens: 2000 }),
    log: quietLog,
    seam,
    ...extra,
  })
}

describe('the context engine', () => {
  it('plans with the surface, applies the ops and reports what landed', async () => {
    const { session, seqs } = buildSession()
    const sidecar = stubSidecar((method) =>
      method === 'context.plan'
        ? { ops: [card('c3', seqs.rounds[2].result)], archived_through: seqs.user2, decision: 'land: saves 370', used_tokens: 5000, window: 64_000 }
        : { landed: 1, failed: 0 },
    )
    const engine = engineWith(sidecar.call)
    const outcome = await engine.run({ session }, 'turn-end', { turn: 2 })
    const [plan, landed] = sidecar.calls
    assert.equal(plan.method, 'context.plan')
    assert.equal(plan.params.namespace, 'ns-1')
    assert.equal(plan.params.session, 'session-1')
    assert.equal(plan.params.phase, 'turn-end')
    assert.equal(plan.params.turn, 2)
    assert.equal(plan.params.window, 64_000)
    assert.equal(plan.params.max_tokens, 4096)
    assert.equal(plan.params.overhead_tokens, 2000)
    assert.equal(plan.params.origin, null)
    assert.deepEqual(plan.params.usage, latestUsage(session))
    assert.equal(plan.params.surface.length, 2 + 2 * 3 + 1)
    assert.equal(landed.method, 'context.landed')
    assert.deepEqual(landed.params, { namespace: 'ns-1', session: 'session-1', ops: [{ ref: 'c3', replacement_seq: session.appended[1].seq }] })
    assert.equal(outcome.decision, 'land: saves 370')
    // The next plan omits what the sidecar archived; an unchanged session is not planned twice in one phase.
    assert.equal(await engine.run({ session }, 'turn-end'), null)
    assert.equal(sidecar.calls.length, 2)
    await engine.run({ session }, 'pre-step')
    const next = sidecar.calls[2].params.surface
    assert.ok(next.filter((n) => n.seq <= seqs.user2).every((n) => !('data' in n)))
    assert.ok(next.some((n) => n.seq > seqs.user2 && 'data' in n), 'the new replacement node is sent in full')
  })

  it('lands nothing past the deadline, and still learns what the late reply archived', async () => {
    const { session, seqs } = buildSession()
    let answer
    const late = new Promise((resolve) => (answer = resolve))
    const calls = []
    const engine = engineWith((method, params) => (calls.push(method), method === 'context.plan' ? late : Promise.resolve({ landed: 0, failed: 0 })), { timeoutMs: () => 20 })
    assert.equal(await engine.run({ session }, 'turn-end'), null)
    assert.deepEqual(session.appended, [], 'nothing landed')
    answer({ ops: [card('c3', seqs.rounds[2].result)], archived_through: seqs.user2, decision: 'land', used_tokens: 1, window: 64_000 })
    await late
    await Promise.resolve()
    assert.equal(engine.archived.get('session-1'), seqs.user2)
    assert.deepEqual(session.appended, [], 'a late plan never lands')
    assert.deepEqual(calls, ['context.plan'])
  })

  it('goes on without the sidecar: a failed call or a missing window lands nothing', async () => {
    const { session } = buildSession()
    const down = engineWith(() => Promise.reject(new Error('StrataGate memory is still starting')))
    assert.equal(await down.run({ session }, 'turn-end'), null)
    const noWindow = engineWith(() => assert.fail('no call without a window'), { modelOf: async () => null })
    assert.equal(await noWindow.run({ session }, 'pre-step'), null)
    const unavailable = engineWith(() => assert.fail('no call when unavailable'), { available: () => false })
    assert.equal(await unavailable.run({ session }, 'pre-step'), null)
    assert.deepEqual(session.appended, [])
  })

  it('forwards a subagent origin and applies whatever the sidecar answers (nothing, for a subagent)', async () => {
    const { session } = buildSession()
    session.header.origin = 'subagent'
    const sidecar = stubSidecar(() => ({ ops: [], archived_through: -1, decision: 'subagent: not managed', used_tokens: 0, window: 64_000 }))
    const outcome = await engineWith(sidecar.call).run({ session }, 'turn-end')
    assert.equal(sidecar.calls[0].params.origin, 'subagent')
    assert.deepEqual(outcome.ops, [])
    assert.equal(sidecar.calls.length, 1, 'no context.landed for an empty batch')
  })

  it('lets a slow landing report arrive before the next plan of the session', async () => {
    const { session, seqs } = buildSession()
    let release
    const slowReport = new Promise((resolve) => (release = resolve))
    const order = []
    const engine = engineWith(
      (method) => {
        order.push(method)
        if (method === 'context.landed') return slowReport.then(() => (order.push('landed answered'), { landed: 1, failed: 0 }))
        return Promise.resolve({ ops: order.length === 1 ? [card('c3', seqs.rounds[2].result)] : [], archived_through: -1, decision: 'x', used_tokens: 1, window: 64_000 })
      },
      { timeoutMs: () => 20 },
    )
    // The turn waits for its report at most one deadline (the report never answers in time here)…
    const first = await engine.run({ session }, 'turn-end')
    assert.equal(first.landed[0].ref, 'c3')
    assert.deepEqual(order, ['context.plan', 'context.landed'])
    // …and the next plan of the session waits for it: it is released right after that plan started.
    const second = engine.run({ session }, 'pre-step')
    release()
    await second
    assert.deepEqual(order, ['context.plan', 'context.landed', 'landed answered', 'context.plan'])
  })

  it('sends the whole surface again when the sidecar no longer has what was left out', async () => {
    const { session, seqs } = buildSession()
    const surfaces = []
    let lost = false
    const engine = engineWith((method, params) => {
      if (method !== 'context.plan') return Promise.resolve({ landed: 0, failed: 0 })
      surfaces.push(params.surface.filter((n) => 'data' in n).length)
      if (lost && params.surface.some((n) => !('data' in n))) {
        return Promise.reject(Object.assign(new Error('surface: seq 1 was never archived, so its data is needed'), { code: -32602 }))
      }
      return Promise.resolve({ ops: [], archived_through: seqs.user2, decision: 'nothing', used_tokens: 1, window: 64_000 })
    })
    await engine.run({ session }, 'turn-end')
    lost = true // e.g. the database was replaced
    const outcome = await engine.run({ session }, 'pre-step')
    assert.equal(outcome.decision, 'nothing')
    assert.deepEqual(surfaces, [9, 0, 9], 'full, then only new nodes (refused), then full again')
  })

  it('reports failed ops to context.landed with their error', async () => {
    const { session, seqs } = buildSession()
    session.failOn = (type) => type === 'user/message'
    const sidecar = stubSidecar((method) => (method === 'context.plan' ? { ops: [fold('f1', seqs.user, seqs.rounds[0].result)], archived_through: 0, decision: 'land', used_tokens: 1, window: 64_000 } : { landed: 0, failed: 1 }))
    await engineWith(sidecar.call).run({ session }, 'turn-end')
    const landed = sidecar.calls[1].params.ops
    assert.equal(landed[0].ref, 'f1')
    assert.match(landed[0].error, /refused/)
  })

  it('is published for the compaction row and withdrawn on dispose', () => {
    const engine = engineWith(() => null)
    const dispose = setContextEngine(engine)
    assert.equal(currentContextEngine(), engine)
    dispose()
    assert.equal(currentContextEngine(), undefined)
  })
})

describe('the compaction row loader', () => {
  class FakeBasic {
    static inject = ['llm', 'tokenMeter', 'sessions']
    constructor(ctx, config) {
      this.ctx = ctx
      this.config = config
    }
  }
  class Ours extends FakeBasic {}

  it('uses StrataGate\'s engine when it loads', async () => {
    assert.equal(await loadEngine(async () => ({ StrataGateCompactionEngine: Ours }), async () => assert.fail('stock not needed')), Ours)
  })

  it('falls back to the stock engine when the engine module throws, and says why', async () => {
    const Engine = await loadEngine(async () => {
      throw new Error('Cannot find package @deepseek-ai/dsh-compaction-basic')
    }, async () => ({ BasicCompactionEngine: FakeBasic }))
    assert.equal(Object.getPrototypeOf(Engine), FakeBasic)
    assert.deepEqual(Engine.inject, FakeBasic.inject, 'same services as the stock row')
    const warned = []
    const instance = new Engine({ logger: { warn: (m) => warned.push(m) } }, { auto: true })
    assert.deepEqual(instance.config, { auto: true })
    assert.match(warned[0], /could not be loaded \(Cannot find package.*stock compaction runs/)
  })
})

describe('the compaction engine (over a stand-in for DSH\'s BasicCompactionEngine)', () => {
  class StockError extends Error {
    constructor(code, message, options) {
      super(message, options)
      this.code = code
    }
  }
  /** Records what the stock engine was asked; answers like it would with nothing to do. */
  class Stock {
    constructor(ctx, config) {
      this.ctx = ctx
      this.config = config
      this.calls = []
    }
    async compactIfNeeded(agent, trigger) {
      this.calls.push(['compactIfNeeded', trigger])
      return 'stock'
    }
    compactNow() {
      this.calls.push(['compactNow'])
      return Promise.resolve('stock now')
    }
  }
  const landedOutcome = { landed: [{ ref: 'c1', replacement_seq: 40 }], shadowed: [12], shadowedTokens: 900 }
  const stubEngine = (outcome) => ({ runs: [], run(agent, phase, options) { this.runs.push({ phase, options }); return Promise.resolve(outcome) } })
  const ctxWith = (total) => ({
    logger: quietLog,
    llm: { resolveModelInfo: async () => ({ context: { contextWindow: 1000 } }) },
    tokenMeter: { measure: () => ({ totalTokens: total }) },
    sessions: { flushed: 0, flush: async function () { this.flushed++ } },
  })
  const agentOf = (session = new FakeSession()) => ({
    session,
    maintenance: 0,
    runMaintenance(fn) {
      this.maintenance++
      return fn(new AbortController().signal)
    },
  })

  it('before a step: plans phase pre-step, then the stock engine checks its own threshold', async () => {
    const engine = stubEngine(landedOutcome)
    const Engine = makeEngineClass(Stock, StockError, () => engine)
    const e = new Engine(ctxWith(5000), {})
    assert.equal(await e.compactIfNeeded(agentOf(), 'pressure', new AbortController().signal), 'stock')
    assert.deepEqual(engine.runs.map((r) => r.phase), ['pre-step'])
    assert.deepEqual(e.calls, [['compactIfNeeded', 'pressure']])
  })

  it('stays out of a session whose agent compacts with another engine (a web preset\'s own)', async () => {
    const engine = stubEngine(landedOutcome)
    const e = new (makeEngineClass(Stock, StockError, () => engine))(ctxWith(0), {})
    const presetAgent = { ...agentOf(), ctx: { get: (name) => (name === 'compaction' ? { other: true } : undefined) } }
    assert.equal(await e.compactIfNeeded(presetAgent, 'pressure', new AbortController().signal), null)
    assert.deepEqual(engine.runs, [])
    assert.deepEqual(e.calls, [], 'not even the stock part')
    const ownAgent = { ...agentOf(), ctx: { get: (name) => (name === 'compaction' ? e : undefined) } }
    assert.equal(await e.compactIfNeeded(ownAgent, 'pressure', new AbortController().signal), 'stock')
    // Cordis hands services out behind per-context proxies: the same engine seen through one is still ours.
    const proxied = new Proxy(e, {})
    const viaProxy = { ...agentOf(), ctx: { get: (name) => (name === 'compaction' ? proxied : undefined) } }
    assert.equal(await e.compactIfNeeded(viaProxy, 'pressure', new AbortController().signal), 'stock')
    const twin = new (makeEngineClass(Stock, StockError, () => engine))(ctxWith(0), {})
    const twinAgent = { ...agentOf(), ctx: { get: (name) => (name === 'compaction' ? new Proxy(twin, {}) : undefined) } }
    assert.equal(await e.compactIfNeeded(twinAgent, 'pressure', new AbortController().signal), null, 'another instance of our class is another engine')
  })

  it('on overflow: what landed is the recovery when the estimate fits the window, else stock runs too', async () => {
    const fits = new (makeEngineClass(Stock, StockError, () => stubEngine(landedOutcome)))(ctxWith(800), {})
    const result = await fits.compactIfNeeded(agentOf(), 'context-overflow', new AbortController().signal)
    assert.deepEqual(result.shadowedSeqs, [12])
    assert.equal(result.shadowedTokenCount, 900)
    assert.deepEqual(fits.calls, [], 'no stock summary needed')
    const still = new (makeEngineClass(Stock, StockError, () => stubEngine(landedOutcome)))(ctxWith(1200), {})
    assert.equal(await still.compactIfNeeded(agentOf(), 'context-overflow', new AbortController().signal), 'stock')
    const nothing = new (makeEngineClass(Stock, StockError, () => stubEngine(null)))(ctxWith(800), {})
    assert.equal(await nothing.compactIfNeeded(agentOf(), 'context-overflow', new AbortController().signal), 'stock')
    const alone = new (makeEngineClass(Stock, StockError, () => undefined))(ctxWith(800), {})
    assert.equal(await alone.compactIfNeeded(agentOf(), 'context-overflow', new AbortController().signal), 'stock', 'without the main plugin: stock')
  })

  it('/compact: plans phase manual in maintenance with turn null and the command id, flushes; else stock', async () => {
    const engine = stubEngine({ ...landedOutcome, summarySeq: 41 })
    const ctx = ctxWith(0)
    const e = new (makeEngineClass(Stock, StockError, () => engine))(ctx, {})
    const agent = agentOf()
    const result = await e.compactNow(agent, new AbortController().signal, 'cmd-7')
    assert.equal(result.summarySeq, 41)
    assert.equal(agent.maintenance, 1)
    assert.equal(ctx.sessions.flushed, 1)
    assert.equal(engine.runs[0].phase, 'manual')
    assert.equal(engine.runs[0].options.turn, null)
    assert.equal(engine.runs[0].options.sourceCommandId, 'cmd-7')
    const none = new (makeEngineClass(Stock, StockError, () => stubEngine(null)))(ctxWith(0), {})
    assert.equal(await none.compactNow(agentOf(), new AbortController().signal, 'cmd-8'), 'stock now')
    const busy = new (makeEngineClass(Stock, StockError, () => stubEngine(null)))(ctxWith(0), {})
    assert.throws(
      () => busy.compactNow({ session: new FakeSession(), runMaintenance: () => { throw new Error('running') } }, new AbortController().signal),
      (error) => error instanceof StockError && error.code === 'busy',
    )
  })
})

describe('importing DSH packages', () => {
  it('falls back to DSH\'s own installation when the package does not resolve from here (a link: install)', async () => {
    const root = tempDir()
    for (const name of ['dsh-compaction-basic', 'dsh-compaction']) {
      const dir = join(root, 'node_modules', '@deepseek-ai', name)
      mkdirSync(dir, { recursive: true })
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `@deepseek-ai/${name}`, type: 'module', exports: { '.': { default: './index.js' } } }))
      writeFileSync(join(dir, 'index.js'), `export const which = ${JSON.stringify(name)}\n`)
    }
    const entry = join(root, 'bin.js')
    writeFileSync(entry, '')
    const tried = []
    const load = (specifier) => (tried.push(specifier), specifier.startsWith('file:') ? import(specifier) : Promise.reject(new Error(`Cannot find package '${specifier}'`)))
    assert.equal((await importDsh('@deepseek-ai/dsh-compaction', { entry, load })).which, 'dsh-compaction')
    assert.equal(tried[1], pathToFileURL(join(root, 'node_modules', '@deepseek-ai', 'dsh-compaction', 'index.js')).href)
    assert.equal((await importDsh('@deepseek-ai/dsh-compaction-basic', { entry, load })).which, 'dsh-compaction-basic')
    await assert.rejects(importDsh('@deepseek-ai/dsh-nothing', { entry, load }), /Cannot find package '@deepseek-ai\/dsh-nothing'/, 'the original error')
  })
})

describe('/memory and settings', () => {
  it('forwards the arguments and the UI language, and prints the sidecar\'s text', async () => {
    const sidecar = stubSidecar(() => ({ text: '上下文 41% · Fold T1 −23.3K' }))
    const command = memoryCommand({ namespaceOf: async () => 'ns-1', call: sidecar.call, lang: () => 'zh' })
    assert.equal(command.name, 'memory')
    const result = await command.handler({ agent: { session: new FakeSession() }, rawInput: ' search  make ', signal: new AbortController().signal })
    assert.deepEqual(result, { kind: 'success', text: '上下文 41% · Fold T1 −23.3K' })
    assert.deepEqual(sidecar.calls[0].params, { namespace: 'ns-1', session: 'session-1', args: 'search  make', lang: 'zh' })
    const resent = []
    const after = memoryCommand({ namespaceOf: async () => 'ns-1', call: sidecar.call, lang: () => 'en', afterward: (session) => resent.push(session.id) })
    await after.handler({ agent: { session: new FakeSession('s-purged') }, rawInput: 'purge confirm', signal: new AbortController().signal })
    assert.deepEqual(resent, ['s-purged'], 'after a command the next plan sends the whole surface again')
    const failing = memoryCommand({ namespaceOf: async () => 'ns-1', call: () => Promise.reject(new Error('down')), lang: () => 'en' })
    assert.deepEqual(await failing.handler({ agent: { session: new FakeSession() }, rawInput: '', signal: new AbortController().signal }), { kind: 'error', text: 'StrataGate memory: down' })
  })

  it('takes the UI language from DSH\'s locale setting, else the process locale', () => {
    assert.equal(uiLanguage({ get: (ns) => (ns === 'locale' ? { preference: 'zh' } : undefined) }, {}), 'zh')
    assert.equal(uiLanguage({ get: () => ({}) }, { LANG: 'zh_CN.UTF-8' }), 'zh')
    assert.equal(uiLanguage(undefined, { LC_ALL: 'en_US.UTF-8', LANG: 'zh_CN.UTF-8' }), 'en')
    assert.equal(uiLanguage(undefined, {}), 'en')
  })

  it('passes the plugin\'s context settings to the sidecar as JSON', () => {
    const { config, warnings } = normalizeConfig({ context: { mode: 'quality', auto_fold: false }, contextTimeoutMs: 2000 })
    assert.deepEqual(warnings, [])
    assert.equal(config.contextTimeoutMs, 2000)
    assert.deepEqual(JSON.parse(sidecarEnv(config, {}).STRATAGATE_CONTEXT_CONFIG), { mode: 'quality', auto_fold: false })
    assert.equal(sidecarEnv(config, { STRATAGATE_CONTEXT_CONFIG: '{"mode":"cost"}' }).STRATAGATE_CONTEXT_CONFIG, '{"mode":"cost"}', 'the environment wins')
    assert.equal(sidecarEnv(normalizeConfig({}).config, {}).STRATAGATE_CONTEXT_CONFIG, undefined)
    assert.match(normalizeConfig({ context: 'quality' }).warnings[0], /context must be an object/)
  })
})
