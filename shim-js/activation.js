// Per-step memory: after DSH assembled the prompt, ask the sidecar for this session's memory text
// (`activation.render`) and add it as the runtime context `stratagate:memory`. The sidecar renders byte-stable
// text, so DSH only re-sends the runtime-context snapshot when memory actually changed. Bounded by
// activationTimeoutMs; any failure or timeout means "no memory this step", never a failed step.
//
// The sidecar picks the recall query (`activation.render_step`, sidecar/stratagate/dsh/query.py): the human message
// the step answers, plus, from the second step of a turn on, the words of the turn's newest tool round. The shim
// forwards the raw step material: the log from the current turn's start, the user messages before it, and the
// messages DSH claimed for this step. Why the claimed messages: at step 0 the new human message is NOT in
// `session.events` yet. DSH 0.1.0-rc.8 (tag dsh-v0.1.0-rc.8), packages/core/agent-loop/src/agent.ts (installed:
// dsh-agent-loop/lib/index.js:496-501, `preStep`/`turn`):
//   preStep() :229  const claimed = this.inbox.claim(target, position.turn)           // removes it from the inbox
//             :230  const assembly = await this.loopCtx.systemPrompt.assemble(assembleContextFor(this, signal))
//             :235  ... await this.dispatch.waterfall('agent/pre-step', { messages: claimed, ... })
//   turn()    :283  this.session.append('user/message', message, ...)  // for each entered message, after assembly
// So at assembly time the prompt is neither in the log nor in `agent.inbox` (claim() already removed it), the
// assemble context is only `{ agent, scope, signal }` (packages/core/agent/src/dispatch.ts:174 `assembleContextFor`),
// and `agent/pre-step` runs after assembly, too late for this step. What does precede assembly is the claim's
// notification: Inbox.claim() calls `notifications.claimed(message, turn)` for every claimed message
// (packages/core/agent/src/inbox.ts:71-76 `claim`), which the loop emits synchronously as `agent/inbox/claimed`
// `{ agent, message, turn }` (agent.ts:90; dispatch.ts:120-129 `agentEvents().emit` calls listeners in place;
// declared in packages/core/agent/src/runtime-types.ts:197).
// StepInbox records those per session; the assemble listener reads them.
//
// The chat's StrataGate Memory row. DSH's web UI shows every plugin-sourced user message as a "Context injection" row
// labelled with its `source.plugin` and rendered by its declared `source.form` (dsh-client-runtime
// `contextProvenance`/`contextForm`; dsh-client-ui-conversation `ContextInjectionRow`): a `catalog` form lists
// `source.entries` `{name, description}`. The runtime context above is credited to `@deepseek-ai/dsh-system-prompt`,
// so the memory text stays there (cache-friendly, unchanged) and a short message of our own names what was recalled:
// `{kind:'plugin', plugin:'StrataGate Memory', form:'catalog', entries}`, its model-facing text one line of ids (the
// sidecar's `note`). It joins the step's messages through the `agent/pre-step` waterfall (preStep: the decision's
// `messages` are what DSH appends before the model call, agent.ts:235), once per turn and whenever the ids change.

import { randomUUID } from 'node:crypto'
import { clipStrings } from './line.js'
import { currentTurnOf, sessionIdOf, sessionOrigin, stepMaterial } from './turns.js'

export const CONTEXT_NAME = 'stratagate:memory'
/** DSH interpolates `{{name}}` in context text strictly (unknown names throw), so literal `{{` is routed via a variable. */
export const LBRACE_VARIABLE = 'stratagate_lbrace'

/** Make memory text safe for DSH's strict `{{variable}}` interpolation; byte-identical after rendering. */
export function escapeForPrompt(text) {
  return text.includes('{{') ? text.replaceAll('{{', `{{${LBRACE_VARIABLE}}}`) : text
}

/** Add the memory context to an assembly (returns the assembly unchanged for empty text). */
export function withMemory(assembled, text) {
  if (!text) return assembled
  const escaped = escapeForPrompt(text)
  const out = { ...assembled, contexts: [...(assembled.contexts ?? []), { name: CONTEXT_NAME, text: escaped }] }
  if (escaped !== text) out.variables = { ...(assembled.variables ?? {}), [LBRACE_VARIABLE]: '{{' }
  return out
}

/** Run `fn(signal)` with a deadline; resolve `fallback` on timeout or error. */
export async function withDeadline(fn, timeoutMs, fallback, onError) {
  const controller = new AbortController()
  let timer
  const deadline = new Promise((resolve) => {
    timer = setTimeout(() => {
      controller.abort(new Error(`timed out after ${timeoutMs} ms`))
      resolve(fallback)
    }, timeoutMs)
  })
  try {
    return await Promise.race([
      Promise.resolve()
        .then(() => fn(controller.signal))
        .catch((error) => {
          onError?.(error)
          return fallback
        }),
      deadline,
    ])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * The messages DSH claimed from each session's inbox for its current turn (`agent/inbox/claimed`), so the assemble
 * listener can see the step's new input before DSH logs it. Bounded: `remember` sessions, `perTurn` messages.
 */
export class StepInbox {
  constructor({ remember = 256, perTurn = 64 } = {}) {
    this.remember = remember
    this.perTurn = perTurn
    /** @type {Map<string, {turn: unknown, messages: object[]}>} */
    this.bySession = new Map()
  }

  /** The `agent/inbox/claimed` listener: `{agent, message, turn}`. */
  record(payload) {
    const session = payload?.agent?.session
    const sid = sessionIdOf(session)
    const message = payload?.message
    if (!sid || !message || typeof message !== 'object') return
    let entry = this.bySession.get(sid)
    if (!entry || entry.turn !== payload.turn) {
      entry = { turn: payload.turn, messages: [] }
      this.bySession.delete(sid)
      this.bySession.set(sid, entry)
      if (this.bySession.size > this.remember) this.bySession.delete(this.bySession.keys().next().value)
    }
    entry.messages.push(message)
    if (entry.messages.length > this.perTurn) entry.messages.shift()
  }

  /** The messages claimed for `turn` of `session` ([] for another turn or an unknown session). */
  claimed(session, turn) {
    const entry = this.bySession.get(sessionIdOf(session))
    return entry && entry.turn === turn ? entry.messages : []
  }

  forget(session) {
    this.bySession.delete(sessionIdOf(session))
  }
}

/**
 * The sidecar reads at most the first 4,000 characters of any one text for the query (docs/protocol.md
 * `activation.render_step`), so longer strings are cut before they cross the pipe: the step stays small however
 * large the turn's tool output.
 */
export const STEP_STRING_MAX = 16_000

/** The raw step material of the step being assembled for `session` (see the header comment). */
export function stepFor(session, stepInbox) {
  const log = session?.events
  const { events, earlier } = stepMaterial(log)
  const claimed = stepInbox ? stepInbox.claimed(session, currentTurnOf(log)) : []
  return clipStrings({ events, earlier, claimed }, STEP_STRING_MAX)
}

/** The chat row's producer label: DSH shows `source.plugin` beside "Context injection". */
export const MEMORY_ROW_PLUGIN = 'StrataGate Memory'

/** The chat row's message: the sidecar's one-line note to the model, its list for the row (`catalog` form). */
export function memoryRowMessage(note, entries) {
  return { id: randomUUID(), role: 'user', content: [{ type: 'text', text: note }], source: { kind: 'plugin', plugin: MEMORY_ROW_PLUGIN, form: 'catalog', entries } }
}

/**
 * What each session's step recalled (set by the assemble listener, taken by the pre-step listener of the same
 * preStep) and which recall its chat last showed, so a row appears once per turn and again when the ids change.
 */
export class MemoryRows {
  constructor({ remember = 256 } = {}) {
    this.remember = remember
    /** @type {Map<string, {note: string, entries: object[], key: string}>} */
    this.pending = new Map()
    /** @type {Map<string, string>} */
    this.shown = new Map()
  }

  /** Record the step's render result (`note`, `entries`, `recalled` from activation.render_step). */
  offer(session, turn, result) {
    const sid = sessionIdOf(session)
    if (!sid) return
    const entries = Array.isArray(result?.entries) ? result.entries.filter((e) => e && typeof e.name === 'string' && e.name && typeof e.description === 'string') : []
    const note = typeof result?.note === 'string' ? result.note : ''
    if (!note || entries.length === 0) {
      this.pending.delete(sid)
      return
    }
    this.pending.set(sid, { note, entries, key: `${turn}|${entries.map((e) => e.name).join(',')}` })
  }

  /** The row message for this step, or null (nothing recalled, or this turn's chat already lists the same ids). */
  take(session) {
    const sid = sessionIdOf(session)
    const row = sid ? this.pending.get(sid) : undefined
    if (!row) return null
    this.pending.delete(sid)
    if (this.shown.get(sid) === row.key) return null
    return { sid, key: row.key, message: memoryRowMessage(row.note, row.entries) }
  }

  /** The row was added to the step: remember it (bounded). */
  mark(sid, key) {
    this.shown.delete(sid)
    this.shown.set(sid, key)
    if (this.shown.size > this.remember) this.shown.delete(this.shown.keys().next().value)
  }

  forget(session) {
    const sid = sessionIdOf(session)
    this.pending.delete(sid)
    this.shown.delete(sid)
  }
}

/**
 * The `agent/pre-step` listener that adds the StrataGate Memory row to the step's messages. Only beside other input,
 * or after a turn's first step: an empty first step ends the turn in DSH, and a row alone must not start one.
 */
export function makeMemoryRowListener({ rows }) {
  return async function memoryRow(payload, next) {
    const decision = await next()
    const row = rows.take(payload?.agent?.session)
    if (!row || decision?.kind !== 'enter' || !Array.isArray(decision.messages)) return decision
    if (decision.messages.length === 0 && !(payload?.step > 1)) return decision
    rows.mark(row.sid, row.key)
    return { ...decision, messages: [...decision.messages, row.message] }
  }
}

/**
 * The `system-prompt/assemble` listener.
 * @param {object} o
 * @param {(session: object, signal: AbortSignal) => Promise<string>} o.namespaceOf
 * @param {(params: object, signal: AbortSignal, timeoutMs: number) => Promise<{text: string}>} o.render - activation.render_step
 * @param {() => boolean} o.available - false when the sidecar is failed/unavailable (skip at once).
 * @param {() => number} o.timeoutMs
 * @param {StepInbox} [o.stepInbox] - the messages claimed for each session's step (the new prompt at step 0).
 * @param {MemoryRows} [o.rows] - receives what the step recalled, for the chat's StrataGate Memory row.
 * @param {() => string} [o.lang] - the UI language the row's reasons are worded in.
 */
export function makeAssembleListener({ namespaceOf, render, available, timeoutMs, stepInbox, rows, lang = () => 'en', log = {} }) {
  return async function assemble(_assembly, context, next) {
    const assembled = await next()
    const session = context?.agent?.session
    if (!session || !available()) return assembled
    const budget = timeoutMs()
    rows?.offer(session, null, null) // a timed-out render leaves no row from an earlier step behind
    const text = await withDeadline(
      async (signal) => {
        const namespace = await namespaceOf(session, signal)
        // The session's origin goes along: the sidecar decides that a subagent gets no recall.
        const params = { namespace, session: sessionIdOf(session), ...stepFor(session, stepInbox), origin: sessionOrigin(session), lang: lang() }
        const result = await render(params, signal, budget)
        // Only a render that made this step's deadline: a late answer's recall is not in this step's prompt.
        if (!signal.aborted) rows?.offer(session, currentTurnOf(session.events), result)
        return typeof result?.text === 'string' ? result.text : ''
      },
      budget,
      '',
      (error) => log.debug?.(`activation.render skipped: ${error?.message ?? error}`),
    )
    return withMemory(assembled, text)
  }
}
