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

/** The latest human prompt of a session log (the recall query), cut to `max` characters. */
export function latestHumanText(log, max = 4000) {
  if (!log || typeof log.length !== 'number') return ''
  for (let i = log.length - 1; i >= 0; i--) {
    const e = log[i]
    if (e?.type === 'user/message' && isHumanMessage(e.data)) {
      const text = textOfBlocks(e.data.content)
      if (text) return text.length > max ? text.slice(0, max) : text
    }
  }
  return ''
}
