// Fold DSH `session/event`s into one `turn.capture` record per `turn/end`.
// Pure functions and one small stateful collector; no DSH imports, unit-tested in tests/js/fold.test.mjs.

/** Tools whose calls are never captured: the shim's own memory tools (reading memory is not new evidence). */
export const OWN_TOOL_PREFIX = 'memory_'

/** The largest capture line the shim sends (the sidecar refuses lines over STRATAGATE_MAX_LINE_BYTES, 8 MiB). */
export const DEFAULT_MAX_CAPTURE_BYTES = 7 * 1024 * 1024

/**
 * Model-facing text of content blocks: text blocks (and the text inside tool-result blocks) joined by newlines.
 * Reasoning and tool-call blocks are not text; images become `[image]`.
 * @param {unknown} blocks
 * @returns {string}
 */
export function textOfBlocks(blocks) {
  if (!Array.isArray(blocks)) return ''
  const out = []
  for (const block of blocks) {
    if (!block || typeof block !== 'object') continue
    if (block.type === 'text' && typeof block.text === 'string') {
      if (block.text.trim()) out.push(block.text)
    } else if (block.type === 'tool-result') {
      const nested = textOfBlocks(block.content)
      if (nested) out.push(nested)
    } else if (block.type === 'image') {
      out.push('[image]')
    }
  }
  return out.join('\n')
}

/** Parse a tool call's raw JSON argument string; keep the raw text when it is not JSON. */
export function parseArguments(raw) {
  if (typeof raw !== 'string') return raw ?? null
  if (raw.trim() === '') return {}
  try {
    return JSON.parse(raw)
  } catch {
    return { raw }
  }
}

/** True for a human prompt; false for plugin-injected context, runtime-context snapshots, compaction checkpoints. */
export function isHumanMessage(message) {
  return message?.source?.kind === 'user'
}

/** A session's own id as a string. */
export function sessionIdOf(session) {
  return String(session?.id ?? session?.header?.id ?? '')
}

/** True when the session is a subagent child (DSH stamps `header.origin = 'subagent'`). */
export function isSubagentSession(session) {
  return session?.header?.origin === 'subagent'
}

/** Whether a session's turns are stored: top-level sessions always, subagent sessions only when configured. */
export function shouldCapture(session, { captureSubagents = false } = {}) {
  return !isSubagentSession(session) || captureSubagents === true
}

function iso(ms) {
  return typeof ms === 'number' && Number.isFinite(ms) ? new Date(ms).toISOString() : new Date().toISOString()
}

/**
 * Fold the events of one turn (from its `turn/start` to its `turn/end`, inclusive) into `turn.capture` params
 * (without `namespace`, which the caller resolves). Returns null when the turn carries nothing to store.
 * @param {readonly object[]} events - the turn's events in log order.
 * @param {object} options
 * @param {string} options.session - the session id.
 * @param {(callId: string) => {value: unknown} | undefined} [options.canonical] - the tool's canonical value, if known.
 * @param {(name: string) => boolean} [options.skipTool] - tools to leave out (default: the memory_* tools).
 * @param {() => number} [options.now] - clock for turns whose events carry no time.
 */
export function foldTurnEvents(events, options) {
  const { session } = options
  const skipTool = options.skipTool ?? ((name) => typeof name === 'string' && name.startsWith(OWN_TOOL_PREFIX))
  const canonical = options.canonical ?? (() => undefined)
  const now = options.now ?? Date.now
  let turn = null
  let startedAt
  let endedAt
  let endReason = null
  const user = []
  const assistantSteps = []
  const tools = []
  const byCall = new Map()
  const skipped = new Set()
  for (const event of events) {
    if (!event || typeof event !== 'object') continue
    const data = event.data ?? {}
    switch (event.type) {
      case 'turn/start':
        turn = data.turn ?? turn
        startedAt = event.time ?? startedAt
        break
      case 'user/message': {
        if (!isHumanMessage(data)) break
        const text = textOfBlocks(data.content)
        if (text) user.push(text)
        break
      }
      case 'assistant/message': {
        const text = textOfBlocks(data.message?.content)
        if (text) assistantSteps.push(text)
        break
      }
      case 'tool/call': {
        const callId = String(data.callId ?? '')
        if (skipTool(data.name)) {
          skipped.add(callId)
          break
        }
        const record = { name: String(data.name ?? 'unknown'), arguments: parseArguments(data.arguments), result: null, is_error: false }
        if (callId) record.call_id = callId
        byCall.set(callId, record)
        tools.push(record)
        break
      }
      case 'tool/result': {
        const message = data.message ?? {}
        const callId = String(message.source?.callId ?? message.content?.[0]?.toolCallId ?? '')
        if (skipped.has(callId)) break
        let record = byCall.get(callId)
        if (!record) {
          // A result without its call (plugin loaded mid-turn): keep it rather than lose it.
          record = { name: 'unknown', arguments: null, result: null, is_error: false }
          if (callId) record.call_id = callId
          byCall.set(callId, record)
          tools.push(record)
        }
        const block = Array.isArray(message.content) ? message.content.find((b) => b?.type === 'tool-result') : undefined
        const isError = Boolean(block?.isError ?? message.isError ?? data.error)
        const known = isError ? undefined : canonical(callId)
        record.result = known !== undefined ? known.value : textOfBlocks(message.content)
        record.is_error = isError
        break
      }
      case 'turn/end':
        turn = data.turn ?? turn
        endedAt = event.time
        endReason = data.reason?.kind ?? null
        break
      default:
        break
    }
  }
  if (turn === null || turn === undefined) return null
  // Calls that never got a result (aborted turn): store them as errors without a result.
  for (const record of tools) {
    if (record.result === null && !record.is_error) {
      record.is_error = true
      record.result = endReason && endReason !== 'completed' ? `no result: the turn ended (${endReason})` : 'no result'
    }
  }
  const userText = user.join('\n\n')
  // The turn's answer is its last step's text; earlier steps' narration ("Let me check…") is kept before it.
  const assistantText = assistantSteps.join('\n\n')
  if (!userText.trim() && !assistantText.trim() && tools.length === 0) return null
  const start = startedAt ?? endedAt ?? now()
  const end = endedAt ?? startedAt ?? now()
  const params = {
    session,
    receipt: `dsh:${session}:turn:${turn}`,
    user: userText,
    assistant: assistantText,
    tools,
    started_at: iso(start),
    ended_at: iso(Math.max(start, end)),
  }
  if (endReason) params.end_reason = String(endReason).slice(0, 64)
  return params
}

/**
 * Shrink a capture until its JSON fits `maxBytes`, by cutting the longest tool results and arguments
 * (with a visible marker). User and assistant text are cut last. Returns the params unchanged when they fit.
 */
export function fitCapture(params, maxBytes = DEFAULT_MAX_CAPTURE_BYTES) {
  const size = (value) => Buffer.byteLength(JSON.stringify(value), 'utf8')
  if (size(params) <= maxBytes) return params
  const out = structuredClone(params)
  const cut = (text, limit) => {
    const s = typeof text === 'string' ? text : JSON.stringify(text)
    if (s.length <= limit) return text
    return `${s.slice(0, limit)}\n[…${s.length - limit} more characters cut by the StrataGate DSH shim: the turn exceeded ${maxBytes} bytes]`
  }
  for (let limit = 256 * 1024; limit >= 1024 && size(out) > maxBytes; limit = Math.floor(limit / 2)) {
    for (const record of out.tools) {
      record.result = cut(record.result, limit)
      record.arguments = typeof record.arguments === 'string' || size(record.arguments) > limit ? cut(record.arguments, limit) : record.arguments
    }
    if (size(out) > maxBytes) {
      out.user = cut(out.user, limit * 4)
      out.assistant = cut(out.assistant, limit * 4)
    }
  }
  return out
}

/** The event types a turn is folded from; everything else (raw stream chunks, titles, headers…) is not buffered. */
export const FOLDED_EVENT_TYPES = new Set(['turn/start', 'user/message', 'assistant/message', 'tool/call', 'tool/result', 'turn/end'])

/**
 * Streaming collector: feed every `session/event`; returns the folded capture params at a turn's `turn/end`.
 * When the turn's start was not observed (the plugin loaded mid-turn), the turn is re-read from
 * `session.events` if the session exposes its log.
 */
export class TurnCollector {
  constructor(options = {}) {
    this.options = options
    /** @type {Map<string, object[]>} */
    this.open = new Map()
  }

  /**
   * @param {object} session - a DSH Session (or `{id, header, events}`).
   * @param {object} event - the appended event.
   * @returns {object | null} capture params (without namespace) when a turn ended, else null.
   */
  accept(session, event) {
    const sid = sessionIdOf(session)
    if (!sid || !event || !FOLDED_EVENT_TYPES.has(event.type)) return null
    if (event.type === 'turn/start') {
      this.open.set(sid, [event])
      return null
    }
    const buffer = this.open.get(sid)
    if (event.type !== 'turn/end') {
      if (buffer) buffer.push(event)
      return null
    }
    this.open.delete(sid)
    let events = buffer ? [...buffer, event] : null
    if (!events || events[0]?.data?.turn !== event.data?.turn) events = eventsOfTurn(session?.events, event.data?.turn) ?? [event]
    return foldTurnEvents(events, { ...this.options, session: sid })
  }

  /** Forget a session's partial turn (session disposed). */
  forget(session) {
    this.open.delete(sessionIdOf(session))
  }
}

/** The events of turn `turn` from a full session log: from its last `turn/start` through the matching `turn/end`. */
export function eventsOfTurn(log, turn) {
  if (!Array.isArray(log) && !(log && typeof log.length === 'number')) return null
  let start = -1
  for (let i = log.length - 1; i >= 0; i--) {
    const e = log[i]
    if (e?.type === 'turn/start' && e.data?.turn === turn) {
      start = i
      break
    }
  }
  if (start < 0) return null
  const out = []
  for (let i = start; i < log.length; i++) {
    out.push(log[i])
    if (log[i]?.type === 'turn/end' && log[i].data?.turn === turn) break
  }
  return out
}

/** The latest human prompt of a session log, cut to `max` characters. */
export function latestHumanText(log, max = 4000) {
  if (!log || typeof log.length !== 'number') return ''
  for (let i = log.length - 1; i >= 0; i--) {
    const e = log[i]
    if (e?.type === 'user/message' && isHumanMessage(e.data)) {
      const text = textOfBlocks(e.data.content)
      if (text) return cut(text, max)
    }
  }
  return ''
}

/** Bounds of the activation query (characters): the human message, and the newest tool round of the turn. */
export const QUERY_HUMAN_MAX = 4000
export const QUERY_TOOL_ROUND_MAX = 2000

function cut(text, max) {
  return text.length > max ? text.slice(0, max) : text
}

function isLog(log) {
  return Boolean(log) && typeof log.length === 'number'
}

/** Index of the current turn's `turn/start` in a session log (-1 when the log has none). */
export function currentTurnStart(log) {
  if (!isLog(log)) return -1
  for (let i = log.length - 1; i >= 0; i--) if (log[i]?.type === 'turn/start') return i
  return -1
}

/** The number of the session's current (latest started) turn, or null. */
export function currentTurnOf(log) {
  const i = currentTurnStart(log)
  return i < 0 ? null : (log[i].data?.turn ?? null)
}

/**
 * The human message a step answers. `claimed` are the messages DSH claimed from the inbox for this step (see
 * activation.js: at step 0 the new prompt is claimed but not yet in the log). The newest claimed human message that
 * the log does not hold yet wins; otherwise the latest human message of the log. Cut to `max` characters.
 */
export function stepHumanText(log, claimed = [], max = QUERY_HUMAN_MAX) {
  const logged = new Set()
  if (isLog(log)) {
    for (let i = Math.max(currentTurnStart(log), 0); i < log.length; i++) {
      const e = log[i]
      if (e?.type === 'user/message' && e.data?.id !== undefined) logged.add(e.data.id)
    }
  }
  for (let i = (claimed?.length ?? 0) - 1; i >= 0; i--) {
    const message = claimed[i]
    if (!isHumanMessage(message) || logged.has(message.id)) continue
    const text = textOfBlocks(message.content)
    if (text) return cut(text, max)
  }
  return latestHumanText(log, max)
}

function leafWords(value, out) {
  if (value === null || value === undefined) return
  if (typeof value === 'string') out.push(value)
  else if (typeof value === 'number' || typeof value === 'boolean') out.push(String(value))
  else if (Array.isArray(value)) for (const v of value) leafWords(v, out)
  else if (typeof value === 'object') for (const v of Object.values(value)) leafWords(v, out)
}

function words(text) {
  return text.replace(/\s+/g, ' ').trim()
}

/**
 * The words of the current turn's newest tool round: the tool calls of the latest assistant message of this turn
 * that called tools, and their results. Per call: the tool's name, its argument values (no JSON syntax, no keys)
 * and its result text, whitespace collapsed, one line per call, each call cut to an equal share of `max`.
 * The shim's own memory tools are left out (their results are memory already shown). '' when this turn has no
 * tool round yet (step 0) or the log is missing.
 */
export function toolRoundText(log, max = QUERY_TOOL_ROUND_MAX, skipTool = (name) => typeof name === 'string' && name.startsWith(OWN_TOOL_PREFIX)) {
  if (!isLog(log) || max <= 0) return ''
  const start = Math.max(currentTurnStart(log), 0)
  let at = -1
  for (let i = log.length - 1; i >= start; i--) {
    const e = log[i]
    if (e?.type !== 'assistant/message') continue
    const content = e.data?.message?.content
    if (Array.isArray(content) && content.some((b) => b?.type === 'tool-call')) {
      at = i
      break
    }
  }
  if (at < 0) return ''
  const step = log[at].data?.step
  const calls = []
  const byCall = new Map()
  for (let i = at + 1; i < log.length; i++) {
    const e = log[i]
    const data = e?.data ?? {}
    if (e?.type === 'tool/call' && (step === undefined || data.step === step)) {
      if (skipTool(data.name)) continue
      const argWords = []
      leafWords(parseArguments(data.arguments), argWords)
      const call = { name: String(data.name ?? ''), args: argWords.join(' '), result: '' }
      calls.push(call)
      byCall.set(String(data.callId ?? ''), call)
    } else if (e?.type === 'tool/result') {
      const message = data.message ?? {}
      const call = byCall.get(String(message.source?.callId ?? message.content?.[0]?.toolCallId ?? ''))
      if (call) call.result = textOfBlocks(message.content)
    }
  }
  if (calls.length === 0) return ''
  const share = Math.max(1, Math.floor((max - (calls.length - 1)) / calls.length))
  const lines = calls.map((c) => cut(words([c.name, c.args, c.result].filter(Boolean).join(' ')), share)).filter(Boolean)
  return cut(lines.join('\n'), max)
}

/**
 * The `activation.render` query of one step: the human message the step answers (the new prompt at step 0, see
 * stepHumanText), then, from the second step of a turn on, the words of the turn's newest tool round.
 * Bounded: QUERY_HUMAN_MAX + 2 + QUERY_TOOL_ROUND_MAX characters at most.
 */
export function activationQuery(log, claimed = [], { humanMax = QUERY_HUMAN_MAX, toolMax = QUERY_TOOL_ROUND_MAX } = {}) {
  return [stepHumanText(log, claimed, humanMax), toolRoundText(log, toolMax)].filter(Boolean).join('\n\n')
}
