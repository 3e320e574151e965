// Test-only Cordis plugin: gives a one-shot `dsh --profile headless` run more than one turn in ONE session.
// When turn N of a top-level session is about to close (`agent/turn-stopping`, awaited before DSH commits the turn
// boundary), it queues `config.followups[N-1]` with `agent.followup` as an ordinary human message
// (`source.kind: 'user'`). DSH's loop then sees pending input after `turn/end` and opens turn N+1 itself
// (agent-loop/src/agent.ts `turn()`: `if (!this.inbox.hasPending) return false`), and the headless runner's
// `agent.whenIdle()` follows that replacement work before it exits. Loaded with --patch; no @deepseek-ai import
// (a file loaded by path cannot resolve them), so the user message is built by hand like createUserMessage does.
import { randomUUID } from 'node:crypto'

export const name = 'stratagate-e2e-followup'

export function apply(ctx, config) {
  const followups = Array.isArray(config?.followups) ? config.followups.map(String) : []
  const sent = new Set()
  ctx.on('agent/turn-stopping', (payload) => {
    const agent = payload?.agent
    if (!agent || agent.session?.header?.origin === 'subagent') return
    const text = followups[(payload.turn ?? 0) - 1]
    const key = `${agent.id}:${payload.turn}`
    if (text === undefined || sent.has(key)) return // once per turn (another listener may steer a second stop)
    sent.add(key)
    agent.followup({ id: randomUUID(), role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } })
  })
}
