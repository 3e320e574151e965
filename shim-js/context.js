// The shim's half of the context engine: collect a session's current surface, ask the sidecar what replaces which
// part of it (`context.plan`), apply those operations to the DSH session exactly as DSH's own compaction packages
// do, and report what landed (`context.landed`). The sidecar decides everything (what is protected, which rounds
// become cards, which block or fold lands, whether the cache miss is worth it, every text); this file only reads the
// session, appends the events DSH's compaction seam allows, and keeps a deadline.
//
// Appends, as in DSH 0.1.0-rc.8:
// - card (one tool result): as the tool-result pruner (dsh-compaction-tool-result-pruner lib/index.js
//   `pruneSession`): `compaction/prune` (log-only shadow price), then a `tool/result` that keeps every field of the
//   original except the result's content, with `surfaceOp: {op:'replace', start, end: start}`.
// - block / fold (a span): as compaction-basic (lib/index.js `compactSurfaceRegion` / `commitCompactionBody`): the
//   bracket `compaction/start` → `compaction/summary` → checkpoint `user/message` (`compactCheckpointSource`,
//   `surfaceOp: {op:'replace', start, end}`, `sourceEventSeqs: [startSeq, summarySeq, ...shadowed]`) →
//   `compaction/end`. Any failure after `compaction/start` closes the bracket with `compaction/end {error}`, so a
//   failed op never leaves an open lock.
// A batch is applied back to front (last surface span first), within the open turn (or, for `/compact`, between
// turns with `turn: null`).
//
// Nothing here imports DSH at load time: the checkpoint source comes from @deepseek-ai/dsh-compaction through a
// dynamic import (dsh-import.js: the profile's packages, else DSH's own installation). Without it cards still land
// and block/fold ops are reported failed with the reason.

import { randomUUID } from 'node:crypto'
import { importDsh } from './dsh-import.js'
import { fitLine, lineBudget } from './line.js'
import { sessionIdOf, sessionOrigin } from './turns.js'

export const PHASES = Object.freeze(['turn-end', 'pre-step', 'overflow', 'manual'])

/** The surface events DSH lets carry a surface marker (dsh-session `SURFACE_EVENT_TYPES`). */
const SURFACE_TYPES = new Set(['user/message', 'assistant/message', 'tool/result'])

/** The events of a session log, indexable by seq (DSH keeps `seq === index`). */
function eventsOf(session) {
  return session?.events ?? []
}

/** The current surface as seqs in positional order. */
export function surfaceSeqs(session) {
  const nodes = session?.surface?.nodes
  return Array.isArray(nodes) ? [...nodes] : []
}

/**
 * The session's current surface as the sidecar reads it (docs/protocol.md `context.plan` `surface`): for each
 * surface node its raw event `{seq, type, data, surfaceOp?, sourceEventSeqs?}`. `data` is left out for seqs up to
 * `archivedThrough` (the sidecar already holds them). DSH marks an appended node `surfaceOp: 'append'`; only a
 * replacement's object marker is forwarded (that is how the sidecar recognises a landed layer).
 */
export function collectSurface(session, archivedThrough = -1) {
  const events = eventsOf(session)
  const out = []
  for (const seq of surfaceSeqs(session)) {
    const event = events[seq]
    if (!event || event.seq !== seq) throw new Error(`surface seq ${seq} has no matching session event`)
    const node = { seq, type: event.type }
    if (seq > archivedThrough) node.data = event.data ?? null
    if (event.surfaceOp && typeof event.surfaceOp === 'object') node.surfaceOp = event.surfaceOp
    if (Array.isArray(event.sourceEventSeqs) && event.surfaceOp && typeof event.surfaceOp === 'object') node.sourceEventSeqs = [...event.sourceEventSeqs]
    out.push(node)
  }
  return out
}

/**
 * The provider's accounting of the latest request, as DSH logs it: `assistant/message` `data.usage` (dsh-llm
 * `TokenUsage`; its counts are disjoint: `inputTokens` is uncached input, `cacheReadTokens`/`cacheWriteTokens` the
 * cached parts). Prompt tokens = the sum of the three; cached = `cacheReadTokens`. `requests` counts the model
 * responses logged so far (one `assistant/message` per request). Null before the first response with usage.
 */
export function latestUsage(session) {
  const events = eventsOf(session)
  let requests = 0
  let usage = null
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]
    if (event?.type !== 'assistant/message') continue
    requests += 1
    if (usage === null && event.data?.usage && typeof event.data.usage === 'object') usage = event.data.usage
  }
  if (usage === null) return requests > 0 ? { requests } : null
  const n = (v) => (Number.isSafeInteger(v) && v >= 0 ? v : 0)
  const cached = n(usage.cacheReadTokens)
  return { prompt_tokens: n(usage.inputTokens) + cached + n(usage.cacheWriteTokens), cached_tokens: cached, requests }
}

/** The open turn's number from the log (the latest `turn/start` not followed by a `turn/end`), else null. */
export function openTurnOf(session) {
  const events = eventsOf(session)
  for (let i = events.length - 1; i >= 0; i--) {
    const type = events[i]?.type
    if (type === 'turn/end') return null
    if (type === 'turn/start') return events[i].data?.turn ?? null
  }
  return null
}

/** Whether a compaction bracket is open in the log (compaction-basic `inspectCompactionEntryState`, same rule). */
export function compactionOpen(session) {
  const events = eventsOf(session)
  let endSeed = -1
  for (let i = events.length - 1; i >= 0; i--) {
    const type = events[i]?.type
    if (type === 'session/end-seed' && endSeed < 0) endSeed = events[i].seq
    if (type === 'compaction/end') return false
    if (type === 'compaction/start') return !(endSeed > events[i].seq) // a start older than a seed boundary is stale
  }
  return false
}

/**
 * The DSH compaction seam's checkpoint helpers (`compactCheckpointSource`, `CompactionId`, the tool-pairing checks),
 * imported once. Null when the package cannot be resolved (a `link:` install): block/fold ops then fail clearly.
 */
let seamPromise = null
export function loadCompactionSeam() {
  seamPromise ??= importDsh('@deepseek-ai/dsh-compaction').then(
    (m) => ({ ok: true, compactCheckpointSource: m.compactCheckpointSource, CompactionId: m.CompactionId, balancedBefore: m.toolPairingBalancedBefore, balancedAfter: m.toolPairingBalancedAfter }),
    (error) => ({ ok: false, error: `the DSH compaction seam (@deepseek-ai/dsh-compaction) cannot be imported: ${error?.message ?? error}` }),
  )
  return seamPromise
}

const errorText = (error) => String(error?.message ?? error).slice(0, 3900)

/** Order ops back to front: by the surface position of their first node, last first. Unknown starts go first (they fail). */
export function backToFront(ops, seqs) {
  const position = new Map(seqs.map((seq, index) => [seq, index]))
  return [...ops].sort((a, b) => (position.get(b.start) ?? Infinity) - (position.get(a.start) ?? Infinity))
}

/**
 * DSH's shadow price of surface nodes: the token meter's heuristic for exactly the replaced messages. DSH's
 * context projections fold `compaction/prune|summary.shadowedTokenCount` against the same estimator (dsh-token-meter
 * `foldSurfaceProjection`: "producers derive them from the same fixed estimator"), so the sidecar's own token count
 * must not go there (a larger figure drives DSH's message-token total negative and breaks the session's history).
 * Without a meter (tests), the op's own figure is used.
 */
export function shadowPrice(session, seqs, meter, fallback) {
  if (meter?.measure) {
    const priced = new Map(meter.measure(session).nodes.map((node) => [node.seq, node.tokens]))
    if (seqs.every((seq) => priced.has(seq))) return seqs.reduce((total, seq) => total + priced.get(seq), 0)
  }
  if (meter?.estimateMessage) {
    const events = eventsOf(session)
    return seqs.reduce((total, seq) => {
      const message = deriveMessage(events[seq])
      return total + (message ? meter.estimateMessage(message) : 0)
    }, 0)
  }
  return Math.max(0, Math.floor(fallback ?? 0))
}

/** dsh-session `deriveEventMessage`: the model message a surface event projects to (null for none). */
function deriveMessage(event) {
  if (event?.type === 'user/message') return event.data
  if (event?.type === 'assistant/message') return event.data?.message?.content?.length ? event.data.message : null
  if (event?.type === 'tool/result') return event.data?.message ?? null
  return null
}

function applyCard(session, op, turn, meter) {
  // DSH's session invariant: a tool/result replacement must be appended inside an open turn (so never by /compact).
  if (turn === null || turn === undefined) throw new Error(`card ${op.ref}: a tool result can only be replaced within an open turn`)
  if (op.start !== op.end) throw new Error(`card ${op.ref}: start ${op.start} and end ${op.end} differ (a card replaces one tool result)`)
  if (!surfaceSeqs(session).includes(op.start)) throw new Error(`card ${op.ref}: seq ${op.start} is not on the current surface`)
  const event = eventsOf(session)[op.start]
  if (event?.type !== 'tool/result') throw new Error(`card ${op.ref}: seq ${op.start} is a ${event?.type ?? 'missing event'}, not a tool/result`)
  const message = event.data?.message
  const result = message?.content?.[0]
  if (!result || typeof result !== 'object') throw new Error(`card ${op.ref}: seq ${op.start} has no tool-result block`)
  // The pruner prices the one replaced message with `tokenMeter.estimateMessage`; the replacement follows at once.
  const price = meter?.estimateMessage ? meter.estimateMessage(message) : shadowPrice(session, [op.start], meter, op.shadowed_tokens)
  session.append('compaction/prune', {
    shadowedRange: { start: op.start, end: op.start },
    shadowedSeqs: [op.start],
    shadowedTokenCount: price,
  })
  const replacement = session.append(
    'tool/result',
    { ...event.data, message: { ...message, content: [{ ...result, content: [{ type: 'text', text: op.text }] }] } },
    { surfaceOp: { op: 'replace', start: op.start, end: op.start }, sourceEventSeqs: [op.start] },
  )
  return { seq: replacement.seq, price }
}

/** Validate a span before the bracket opens, so a bad op costs no failed-attempt record. */
function checkSpan(session, op, seam) {
  const seqs = surfaceSeqs(session)
  const startIdx = seqs.indexOf(op.start)
  const endIdx = seqs.indexOf(op.end)
  if (startIdx < 0) throw new Error(`${op.kind} ${op.ref}: start seq ${op.start} is not on the current surface`)
  if (endIdx < 0) throw new Error(`${op.kind} ${op.ref}: end seq ${op.end} is not on the current surface`)
  if (startIdx > endIdx) throw new Error(`${op.kind} ${op.ref}: start seq ${op.start} comes after end seq ${op.end} on the surface`)
  if (seam.balancedBefore && !seam.balancedBefore(session, op.start)) throw new Error(`${op.kind} ${op.ref}: start seq ${op.start} would split a tool call from its result`)
  if (seam.balancedAfter && !seam.balancedAfter(session, op.end)) throw new Error(`${op.kind} ${op.ref}: end seq ${op.end} would split a tool call from its result`)
  return seqs.slice(startIdx, endIdx + 1)
}

function applySpan(session, op, seam, { turn, sourceCommandId, meter }) {
  if (!seam.ok) throw new Error(seam.error)
  const shadowedSeqs = checkSpan(session, op, seam)
  const price = shadowPrice(session, shadowedSeqs, meter, op.shadowed_tokens)
  if (compactionOpen(session)) throw new Error(`${op.kind} ${op.ref}: a compaction is already in progress in this session`)
  const compactionId = seam.CompactionId(randomUUID())
  const lifecycle = { compactionId, ...(sourceCommandId === undefined ? {} : { sourceCommandId }), turn }
  const startEvent = session.append('compaction/start', lifecycle)
  try {
    const summaryEvent = session.append('compaction/summary', {
      compactionId,
      ...(sourceCommandId === undefined ? {} : { sourceCommandId }),
      summary: [{ type: 'text', text: op.text }],
      shadowedRange: { start: op.start, end: op.end },
      shadowedSeqs,
      shadowedTokenCount: price,
      provider: 'stratagate-py',
      model: `context-${op.kind}`,
      stratagate: { ref: op.ref, kind: op.kind, tier: op.tier ?? null, auto: Boolean(op.auto) },
    })
    const checkpoint = session.append(
      'user/message',
      { id: randomUUID(), role: 'user', content: [{ type: 'text', text: op.text }], source: seam.compactCheckpointSource(compactionId, sourceCommandId) },
      { surfaceOp: { op: 'replace', start: op.start, end: op.end }, sourceEventSeqs: [startEvent.seq, summaryEvent.seq, ...shadowedSeqs] },
    )
    session.append('compaction/end', lifecycle)
    return { seq: checkpoint.seq, summarySeq: summaryEvent.seq, shadowedSeqs, price }
  } catch (error) {
    // The bracket must close (compaction-basic does the same); if even that fails the open start stays as DSH's
    // own "busy" signal, which is what DSH does too.
    try {
      session.append('compaction/end', { ...lifecycle, error: errorText(error) })
    } catch {}
    throw error
  }
}

/**
 * Apply a plan's ops to a session, back to front. Never throws: each op ends as `{ref, replacement_seq}` or
 * `{ref, error}` (the shape `context.landed` takes). `turn` is the bracket owner (the open turn, or null between
 * turns for `/compact`). Returns the landed entries plus, for the caller's CompactionResult, the shadowed seqs.
 */
export async function applyOps(session, ops, { turn = openTurnOf(session), sourceCommandId, seam, meter } = {}) {
  const landed = []
  const shadowed = []
  let shadowedTokens = 0
  let lastSummarySeq
  const spanSeam = ops.some((op) => op.kind !== 'card') ? (seam ?? (await loadCompactionSeam())) : null
  for (const op of backToFront(ops, surfaceSeqs(session))) {
    try {
      if (op.kind === 'card') {
        const card = applyCard(session, op, turn, meter)
        landed.push({ ref: op.ref, replacement_seq: card.seq })
        shadowed.push(op.start)
        shadowedTokens += card.price
      } else if (op.kind === 'block' || op.kind === 'fold') {
        const span = applySpan(session, op, spanSeam, { turn, sourceCommandId, meter })
        landed.push({ ref: op.ref, replacement_seq: span.seq })
        shadowed.push(...span.shadowedSeqs)
        shadowedTokens += span.price
        lastSummarySeq = span.summarySeq
      } else {
        throw new Error(`unknown op kind ${JSON.stringify(op.kind)}`)
      }
    } catch (error) {
      landed.push({ ref: String(op.ref), error: errorText(error) })
    }
  }
  return { landed, shadowed, shadowedTokens, summarySeq: lastSummarySeq }
}

/**
 * The model facts a plan needs, from DSH's services: the session's routed target (`requestHeader().config`, else the
 * agent's options, else DSH's default model), its context window (`ctx.llm.resolveModelInfo` → `context.contextWindow`)
 * and output cap, and the fixed overhead as DSH's token meter prices it (request total − surface). Null when the
 * window is unknown (no plan without it).
 */
export function makeModelOf({ llm, defaultModel = () => undefined, tokenMeter = () => undefined }) {
  return async (session, agent, signal) => {
    const routed = session?.requestHeader?.()?.config
    const options = agent?.options
    let target = routed?.provider && routed?.model ? routed : options?.provider && options?.model ? options : null
    if (!target) {
      try {
        target = defaultModel()?.currentSelection?.() ?? null
      } catch {}
    }
    if (!target?.provider || !target?.model) return null
    const service = llm()
    if (!service?.resolveModelInfo) return null
    const info = await service.resolveModelInfo(target.provider, target.model, signal)
    const window = info?.context?.contextWindow
    if (!Number.isInteger(window) || window <= 0) return null
    let overhead = null
    try {
      const measured = tokenMeter()?.measure?.(session)
      if (measured && Number.isFinite(measured.totalTokens) && Number.isFinite(measured.surfaceTokens)) overhead = Math.max(0, Math.round(measured.totalTokens - measured.surfaceTokens))
    } catch {}
    const maxTokens = Number.isInteger(routed?.maxTokens) ? routed.maxTokens : Number.isInteger(info?.defaultMaxTokens) ? info.defaultMaxTokens : null
    return { window, max_tokens: maxTokens, overhead_tokens: overhead }
  }
}

/** Settle `promise` within `ms`; `null` on timeout (the promise keeps running, its late result is the caller's). */
function within(promise, ms) {
  let timer
  return Promise.race([promise, new Promise((resolve) => (timer = setTimeout(() => resolve(null), ms)))]).finally(() => clearTimeout(timer))
}

/**
 * One engine per shim process: per session, what the sidecar last archived and a guard so one plan per session is
 * in flight and an unchanged session is not planned twice in the same phase (our compaction engine and the host
 * `agent/pre-step` listener may both ask before one step).
 */
export class ContextEngine {
  /**
   * @param {object} o
   * @param {(method: string, params: object, options: {timeoutMs: number, signal?: AbortSignal}) => Promise<any>} o.call - sidecar call
   * @param {(session: object, signal?: AbortSignal) => Promise<string>} o.namespaceOf
   * @param {(session: object, agent?: object, signal?: AbortSignal) => Promise<{window: number, max_tokens?: number|null, overhead_tokens?: number|null}|null>} o.modelOf
   * @param {() => boolean} [o.available]
   * @param {() => number} [o.timeoutMs] - deadline of one plan call
   * @param {object} [o.log]
   * @param {Record<string,string>} [o.env]
   * @param {() => object|undefined} [o.meter] - DSH's token meter (the shadow prices)
   */
  constructor({ call, namespaceOf, modelOf, available = () => true, timeoutMs = () => 5000, log = {}, env = process.env, seam, meter = () => undefined }) {
    this.meter = meter
    this.call = call
    this.namespaceOf = namespaceOf
    this.modelOf = modelOf
    this.available = available
    this.timeoutMs = timeoutMs
    this.log = log
    this.env = env
    this.seam = seam
    this.archived = new Map() // session id → archived_through of the last reply
    this.planned = new Map() // session id → `${phase}@${session.seq}` of the last plan
    this.inFlight = new Map() // session id → promise
    this.reports = new Map() // session id → the context.landed call still on its way
  }

  /**
   * Plan and land for one session. Resolves `{ops, landed, shadowed, ...}` or null (skipped, sidecar down, deadline);
   * never throws. `phase` ∈ PHASES. `turn` is the bracket owner (default: the log's open turn).
   */
  async run(agent, phase, { signal, sourceCommandId, turn } = {}) {
    const session = agent?.session
    if (!session || !PHASES.includes(phase) || !this.available() || signal?.aborted) return null
    const id = sessionIdOf(session)
    const key = `${phase}@${session.seq ?? eventsOf(session).length}`
    if (this.planned.get(id) === key) return null
    if (this.inFlight.has(id)) return null
    const work = this.plan(agent, session, id, phase, { signal, sourceCommandId, turn })
      .catch((error) => {
        this.log.warn?.(`context.plan (${phase}) for ${id} failed: ${error?.message ?? error}; nothing landed`)
        return null
      })
      .finally(() => {
        this.inFlight.delete(id)
        this.planned.set(id, `${phase}@${session.seq ?? eventsOf(session).length}`)
        if (this.planned.size > 1024) this.planned.delete(this.planned.keys().next().value)
      })
    this.inFlight.set(id, work)
    return work
  }

  async plan(agent, session, id, phase, { signal, sourceCommandId, turn }) {
    const deadline = this.timeoutMs()
    const started = Date.now()
    const remaining = () => Math.max(1, deadline - (Date.now() - started))
    // The sidecar handles requests concurrently: let the previous landing's report arrive first, so this plan sees
    // those layers as landed (bounded by this plan's own deadline).
    if (this.reports.has(id)) await within(this.reports.get(id), remaining())
    const namespace = await within(this.namespaceOf(session, signal), remaining())
    if (!namespace) return this.skip(id, phase, 'namespace unknown in time')
    const model = await within(Promise.resolve(this.modelOf(session, agent, signal)).catch(() => null), remaining())
    if (!model?.window) return this.skip(id, phase, 'model context window unknown')
    const owner = turn === undefined ? openTurnOf(session) : turn
    const ask = (archivedThrough) => {
      const params = {
        namespace,
        session: id,
        origin: sessionOrigin(session),
        phase,
        turn: owner,
        window: model.window,
        max_tokens: model.max_tokens ?? null,
        overhead_tokens: model.overhead_tokens ?? null,
        surface: collectSurface(session, archivedThrough),
        usage: latestUsage(session),
      }
      // The call keeps running past the deadline: its late reply still tells us what the sidecar archived, so the
      // next plan does not resend everything (and time out again). Its ops are dropped: nothing lands late.
      const pending = this.call('context.plan', fitLine(params, lineBudget(this.env)), { timeoutMs: Math.max(deadline, 30_000), signal })
      pending.then(
        (result) => Number.isInteger(result?.archived_through) && this.archived.set(id, result.archived_through),
        () => {},
      )
      return within(pending, remaining())
    }
    const archivedThrough = this.archived.get(id) ?? -1
    let result
    try {
      result = await ask(archivedThrough)
    } catch (error) {
      // The sidecar no longer has what we left out (a new database, a purged archive): send everything, once.
      this.archived.delete(id)
      if (error?.code !== -32602 || archivedThrough < 0) throw error
      this.log.info?.(`context.plan for ${id} needs the whole surface again (${error.message}); resending`)
      result = await ask(-1)
    }
    if (result === null) return this.skip(id, phase, `no plan within ${deadline} ms`)
    const ops = Array.isArray(result.ops) ? result.ops : []
    if (ops.length === 0 || signal?.aborted) {
      this.log.debug?.(`context (${phase}) ${id}: nothing to land — ${result.decision ?? ''}`)
      return { phase, ops: [], landed: [], shadowed: [], shadowedTokens: 0, decision: result.decision ?? '' }
    }
    const applied = await applyOps(session, ops, { turn: owner, sourceCommandId, seam: this.seam, meter: this.meter() })
    const failed = applied.landed.filter((entry) => entry.error)
    for (const entry of failed) this.log.warn?.(`context op ${entry.ref} did not land in ${id}: ${entry.error}`)
    this.log.info?.(`context (${phase}) ${id}: ${applied.landed.length - failed.length} landed, ${failed.length} failed — ${result.decision ?? ''}`)
    // Report after applying: the ops already landed in DSH, the sidecar must learn it. The turn waits at most one
    // more deadline; a slower report keeps going and the next plan of this session waits for it first.
    const report = Promise.resolve(this.call('context.landed', { namespace, session: id, ops: applied.landed }, { timeoutMs: 30_000 }))
      .catch((error) => this.log.warn?.(`context.landed for ${id} failed: ${error?.message ?? error}`))
      .finally(() => this.reports.get(id) === report && this.reports.delete(id))
    this.reports.set(id, report)
    await within(report, deadline)
    return { phase, ops, ...applied, decision: result.decision ?? '' }
  }

  skip(id, phase, why) {
    this.log.debug?.(`context (${phase}) ${id}: skipped, ${why}`)
    return null
  }

  /** Send the whole surface again at the next plan (e.g. after `/memory purge confirm` emptied the archive). */
  resend(session) {
    this.archived.delete(sessionIdOf(session))
  }

  forget(session) {
    const id = sessionIdOf(session)
    this.archived.delete(id)
    this.planned.delete(id)
    this.reports.delete(id)
  }
}

/**
 * A CompactionResult-shaped summary of one landing (dsh-compaction `CompactionResult`: DSH's overflow handler and
 * `/compact` read `shadowedSeqs`, `shadowedRange`, `shadowedTokenCount` and `summarySeq`), or null if nothing landed.
 */
export function compactionResultOf(outcome) {
  if (!outcome) return null
  const ok = outcome.landed?.filter((entry) => !entry.error) ?? []
  if (ok.length === 0) return null
  const seqs = [...(outcome.shadowed ?? [])].sort((a, b) => a - b)
  return {
    stratagate: true,
    landed: ok.map((entry) => entry.ref),
    shadowedSeqs: seqs,
    shadowedRange: { start: seqs[0], end: seqs.at(-1) },
    shadowedTokenCount: outcome.shadowedTokens ?? 0,
    ...(outcome.summarySeq === undefined ? {} : { summarySeq: outcome.summarySeq }),
  }
}

// The one engine of this process, shared with the compaction row (shim-js/compaction-engine.js), which Cordis loads
// as a separate plugin from the same package. A global symbol survives a second copy of this module (hot reload).
const HUB = Symbol.for('stratagate-py.context-engine')

/** Publish the engine the compaction row should ask; returns the disposer that withdraws it (if still current). */
export function setContextEngine(engine) {
  globalThis[HUB] = engine
  return () => {
    if (globalThis[HUB] === engine) delete globalThis[HUB]
  }
}

/** The published engine, or undefined (the main plugin is not loaded: the compaction row then acts as stock). */
export function currentContextEngine() {
  return globalThis[HUB]
}

/** Whether a node type may appear on the surface (for tests and sanity checks). */
export const isSurfaceType = (type) => SURFACE_TYPES.has(type)
