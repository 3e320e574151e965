// Test-only Cordis plugin: runs human slash commands through DSH's own command registry (`ctx.commands.execute`,
// dsh-commands 0.1.0-rc.8) in a headless run, where no UI can type them. When turn N of a top-level session is
// about to close (`agent/turn-stopping`), it executes `config.commands[N-1]` (a line like "/memory status") for that
// agent and appends `{turn, line, result}` as one JSON line to `config.out`. Loaded with --patch; no @deepseek-ai
// import (a file loaded by path cannot resolve them).
import { appendFileSync } from 'node:fs'

export const name = 'stratagate-e2e-commands'
export const inject = ['commands']

export function apply(ctx, config) {
  const lines = Array.isArray(config?.commands) ? config.commands.map(String) : []
  const out = String(config?.out ?? '')
  const done = new Set()
  ctx.on('agent/turn-stopping', async (payload) => {
    const agent = payload?.agent
    if (!agent || agent.session?.header?.origin === 'subagent') return
    const line = lines[(payload.turn ?? 0) - 1]
    const key = `${agent.id}:${payload.turn}`
    if (line === undefined || done.has(key)) return
    done.add(key)
    let record
    try {
      const execution = await ctx.commands.execute(agent, line, [], payload.signal ?? new AbortController().signal)
      record = { turn: payload.turn, line, result: execution?.result ?? null }
    } catch (error) {
      record = { turn: payload.turn, line, thrown: String(error?.message ?? error) }
    }
    if (out) appendFileSync(out, `${JSON.stringify(record)}\n`)
  })
}
