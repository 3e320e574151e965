// StrataGate's CompactionEngine (`ctx.compaction`): DSH's BasicCompactionEngine with the context engine asked
// first. Loaded through shim-js/compaction.js (which falls back to the stock engine if this file cannot load).
//
// - `compactIfNeeded(agent, 'pressure')` (DSH calls it from `agent/pre-step`): the sidecar plans phase `pre-step`
//   and the shim lands what it returns (usually nothing in cost mode); then the stock engine runs its own
//   threshold check (0.8·W by default) and summarises only if the context is still above it: the last resort.
// - `compactIfNeeded(agent, 'context-overflow')` (DSH's `agent/request-error` for an overflow): phase `overflow`;
//   if what landed brought the estimate below the window, that is the recovery (DSH retries the request);
//   otherwise the stock forced reduction runs as well.
// - `compactNow` (`/compact`): phase `manual` inside `agent.runMaintenance` (the agent is idle, brackets carry
//   `turn: null` and the command id); if nothing of ours landed, the stock manual compaction runs.
// - `compactRegion` stays stock (an explicit summary of a given span).
// Everything the sidecar decides and every text comes from `context.plan`; see shim-js/context.js.

import { ManualCompactionError } from '@deepseek-ai/dsh-compaction'
import { BasicCompactionEngine } from '@deepseek-ai/dsh-compaction-basic'
import { compactionResultOf, currentContextEngine } from './context.js'

export class StrataGateCompactionEngine extends BasicCompactionEngine {
  constructor(ctx, config) {
    super(ctx, config)
    ctx?.logger?.info?.('StrataGate compaction engine active: the context engine plans first, stock compaction is the last resort')
  }

  async compactIfNeeded(agent, trigger, signal) {
    const engine = currentContextEngine()
    if (engine && agent?.session && !signal?.aborted) {
      const outcome = await engine.run(agent, trigger === 'context-overflow' ? 'overflow' : 'pre-step', { signal })
      const ours = compactionResultOf(outcome)
      if (trigger === 'context-overflow' && ours && (await this.belowWindow(agent, signal))) return ours
    }
    return super.compactIfNeeded(agent, trigger, signal)
  }

  /** Whether the session's estimated request now fits the routed model's window (ctx.tokenMeter, as stock). */
  async belowWindow(agent, signal) {
    try {
      const config = agent.session.requestHeader?.()?.config
      if (!config?.provider || !config?.model) return false
      const info = await this.ctx.llm.resolveModelInfo(config.provider, config.model, signal)
      const window = info?.context?.contextWindow
      return Number.isInteger(window) && this.ctx.tokenMeter.measure(agent.session).totalTokens < window
    } catch {
      return false
    }
  }

  compactNow(agent, signal, sourceCommandId) {
    const engine = currentContextEngine()
    if (!engine) return super.compactNow(agent, signal, sourceCommandId)
    signal.throwIfAborted()
    let reserved
    try {
      reserved = agent.runMaintenance(async (agentSignal) => {
        const outcome = await engine.run(agent, 'manual', { signal: AbortSignal.any([agentSignal, signal]), sourceCommandId, turn: null })
        const ours = compactionResultOf(outcome)
        if (ours) await this.ctx.sessions.flush(agent.session)
        return ours
      })
    } catch (error) {
      throw new ManualCompactionError('busy', 'manual compaction requires an idle agent with no waking queued work', { cause: error })
    }
    return reserved.then((ours) => ours ?? super.compactNow(agent, signal, sourceCommandId))
  }
}

export default StrataGateCompactionEngine
