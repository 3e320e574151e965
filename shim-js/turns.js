// Raw DSH session events → the payloads the sidecar folds (turn.capture_raw) and reads the recall query from
// (activation.render_step). Transport only: which events make a turn, what the turn stores, the receipt, the
// query and every cut are the sidecar's decisions (sidecar/stratagate/dsh/). Pure; tests/js/turns.test.mjs.

import { readFileSync } from 'node:fs'

/**
 * The event types the sidecar reads (`stratagate turn-events` > plugin/turn-events.json; a test keeps them
 * identical). Only these are buffered and forwarded: stream deltas, request headers (the whole system prompt and
 * tool schemas), titles and steps would only multiply the size of every spooled turn and every step.
 */
export const FORWARDED = Object.freeze(
  new Set(JSON.parse(readFileSync(new URL('../plugin/turn-events.json', import.meta.url), 'utf8')).event_types),
)

const forwarded = (event) => Boolean(event) && typeof event === 'object' && FORWARDED.has(event.type)

/** A session's own id as a string. */
export function sessionIdOf(session) {
  return String(session?.id ?? session?.header?.id ?? '')
}

/** DSH stamps subagent children `header.origin = 'subagent'`; the sidecar decides what that means (capture, recall, nudge). */
export function sessionOrigin(session) {
  const origin = session?.header?.origin
  return typeof origin === 'string' ? origin : null
}

function isLog(log) {
  return Boolean(log) && typeof log.length === 'number'
}

/** Index of the latest `turn/start` in a session log (-1 when there is none). */
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

/** The events of turn `turn` from a full session log: its last `turn/start` through the matching `turn/end`. */
export function eventsOfTurn(log, turn) {
  if (!isLog(log)) return null
  let start = -1
  for (let i = log.length - 1; i >= 0; i--) {
    if (log[i]?.type === 'turn/start' && log[i].data?.turn === turn) {
      start = i
      break
    }
  }
  if (start < 0) return null
  const out = []
  for (let i = start; i < log.length; i++) {
    if (forwarded(log[i])) out.push(log[i])
    if (log[i]?.type === 'turn/end' && log[i].data?.turn === turn) break
  }
  return out
}

/** How many `user/message` events before the current turn a step forwards (the sidecar's human-text fallback). */
export const EARLIER_USER_EVENTS = 16

/**
 * The raw material of the step being assembled: the log from the current turn's start, and the `user/message`
 * events before it (newest EARLIER_USER_EVENTS, oldest first). The sidecar picks the query from them plus the
 * messages claimed from the inbox (activation.js).
 */
export function stepMaterial(log) {
  if (!isLog(log)) return { events: [], earlier: [] }
  const start = Math.max(currentTurnStart(log), 0)
  const events = []
  for (let i = start; i < log.length; i++) if (forwarded(log[i])) events.push(log[i])
  const earlier = []
  for (let i = start - 1; i >= 0 && earlier.length < EARLIER_USER_EVENTS; i--) {
    if (log[i]?.type === 'user/message') earlier.unshift(log[i])
  }
  return { events, earlier }
}

/** The call ids a turn's events name (to attach the canonical tool values the shim saw for them). */
export function callIdsOf(events) {
  const ids = new Set()
  for (const e of events) if (e?.type === 'tool/call' && e.data?.callId !== undefined) ids.add(String(e.data.callId))
  return ids
}

/**
 * Buffers each session's events from `turn/start` to `turn/end`. At `turn/end` it returns the turn's raw events;
 * when the start was not observed (the plugin loaded mid-turn) the turn is re-read from `session.events`.
 */
export class TurnBuffer {
  constructor() {
    /** @type {Map<string, object[]>} */
    this.open = new Map()
  }

  /** @returns {{session: string, turn: unknown, events: object[]} | null} */
  accept(session, event) {
    const sid = sessionIdOf(session)
    if (!sid || !forwarded(event)) return null
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
    return { session: sid, turn: event.data?.turn ?? null, events }
  }

  /** Forget a session's partial turn (session disposed). */
  forget(session) {
    this.open.delete(sessionIdOf(session))
  }
}
