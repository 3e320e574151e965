// Turn-end nudge (`agent/turn-stopping`): if memory retrievals of this turn were left without an assessment or a
// use receipt, steer the agent once with a short reminder. The sidecar decides what is open and words the reminder
// (`evidence.open_batches` → `nudge`); this file only asks, steers, and remembers which turn it already nudged.
// Bounded by a deadline: a slow or missing sidecar means no nudge, never a delayed or failed turn.

import { randomUUID } from 'node:crypto'
import { withDeadline } from './activation.js'
import { sessionIdOf, sessionOrigin } from './turns.js'
import { PLUGIN_SOURCE } from './host-llm.js'

/** The steering message: a plugin-sourced user message, as DSH's `agent.steer` expects. */
export function nudgeMessage(text) {
  return { id: randomUUID(), role: 'user', content: [{ type: 'text', text }], source: PLUGIN_SOURCE }
}

/**
 * The `agent/turn-stopping` listener.
 * @param {object} o
 * @param {(session: object, signal: AbortSignal) => Promise<string>} o.namespaceOf
 * @param {(params: {namespace: string, session: string}, signal: AbortSignal, timeoutMs: number) => Promise<{nudge?: string|null}>} o.openBatches
 * @param {() => boolean} o.available - false when the sidecar is failed/unavailable (skip at once).
 * @param {() => number} o.timeoutMs
 * @param {number} [o.remember] - how many sessions' last nudged turn to keep.
 * @returns {(payload: object) => Promise<boolean>} resolves true when it steered (the turn goes on).
 */
export function makeTurnStoppingListener({ namespaceOf, openBatches, available, timeoutMs, log = {}, remember = 256 }) {
  const nudged = new Map() // session id → the turn it was nudged in (once per turn)
  return async function turnStopping(payload) {
    const agent = payload?.agent
    const session = agent?.session
    if (!session || typeof agent.steer !== 'function' || !available()) return false
    const id = sessionIdOf(session)
    const turn = payload.turn ?? null
    if (nudged.has(id) && nudged.get(id) === turn) return false
    const budget = timeoutMs()
    const result = await withDeadline(
      // The sidecar decides that a subagent session is never nudged (it answers no nudge for one).
      async (signal) => openBatches({ namespace: await namespaceOf(session, signal), session: id, origin: sessionOrigin(session) }, signal, budget),
      budget,
      null,
      (error) => log.debug?.(`evidence.open_batches skipped: ${error?.message ?? error}`),
    )
    const text = typeof result?.nudge === 'string' ? result.nudge.trim() : ''
    if (!text || payload.signal?.aborted) return false
    nudged.delete(id)
    nudged.set(id, turn)
    if (nudged.size > remember) nudged.delete(nudged.keys().next().value)
    log.info?.(`memory nudge for session ${id} turn ${turn}: ${(result.batches ?? []).map((b) => b.batch_id).join(', ')} open`)
    agent.steer(nudgeMessage(text))
    return true
  }
}
