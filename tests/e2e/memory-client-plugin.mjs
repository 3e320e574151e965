// Test-only Cordis plugin: a second plugin that uses StrataGate's memory the way plugins written for
// dsh-memory-connect do, through the injected `crossSessionMemory` service. When turn 1 of a top-level session is
// about to close (`agent/turn-stopping`) it stores `config.memory` for that session, searches for it
// (`config.query`), reads the stats, recalls for another session and reads the stored memory back, appends
// everything as one JSON line to `config.out`, then queues `config.followup` as turn 2 (as followup-plugin.mjs
// does) so the main agent's next request shows whether it recalls the memory. Loaded with --patch; no
// @deepseek-ai import (a file loaded by path cannot resolve them).
import { randomUUID } from 'node:crypto'
import { appendFileSync } from 'node:fs'

export const name = 'stratagate-e2e-memory-client'
export const inject = ['crossSessionMemory']

export function apply(ctx, config) {
  const out = String(config?.out ?? '')
  const done = new Set()
  ctx.on('agent/turn-stopping', async (payload) => {
    const agent = payload?.agent
    if (!agent || agent.session?.header?.origin === 'subagent' || payload.turn !== 1 || done.has(agent.id)) return
    done.add(agent.id)
    const memory = ctx.crossSessionMemory
    const sessionId = agent.session.id
    const record = { sessionId }
    try {
      record.stored = await memory.storeMemory({ ...config.memory, sessionId })
      record.found = await memory.searchMemories({ query: config.query, types: [config.memory.type], limit: 5 })
      record.stats = await memory.getStats()
      record.recalled = await memory.recallForSession('another-session', config.query, 5)
      record.got = await memory.getMemory(record.stored.id)
      record.refused = await memory.storeMemory({ type: 'memo', content: 'x' }).then(() => null, (error) => String(error?.message ?? error))
    } catch (error) {
      record.thrown = String(error?.stack ?? error)
    }
    if (out) appendFileSync(out, `${JSON.stringify(record)}\n`)
    agent.followup({ id: randomUUID(), role: 'user', content: [{ type: 'text', text: String(config.followup) }], source: { kind: 'user' } })
  })
}
