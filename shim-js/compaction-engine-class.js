// The StrataGate CompactionEngine as a subclass of whatever engine class it is given (DSH's BasicCompactionEngine in
// compaction-engine.js; a stand-in in tests/js/context.test.mjs). Everything the sidecar decides and every text
// comes from `context.plan` (shim-js/context.js); this class only decides when to ask and when stock runs.
//
// - `compactIfNeeded(agent, 'pressure')` (DSH calls it from `agent/pre-step`): plan phase `pre-step` and land (usually
//   nothing in cost mode); then the stock engine runs its own threshold check (0.8·W by default) and summarises only
//   if the context is still above it: the last resort.
// - `compactIfNeeded(agent, 'context-overflow')` (DSH's `agent/request-error`): phase `overflow`; if what landed brought
//   the token meter's estimate below the window, that is the recovery (DSH retries the request); otherwise the stock
//   forced reduction runs as well.
// - `compactNow` (`/compact`): phase `manual` inside `agent.runMaintenance` (idle agent; brackets carry `turn: null`
//   and the command id; flushed like the stock manual compaction); if nothing of ours landed, stock `/compact` runs.
// - `compactRegion` stays stock (an explicit summary of a given span).

import { randomUUID } from 'node:crypto'
import { compactionResultOf, currentContextEngine } from './context.js'

/** Each engine instance's identity, readable through the context-bound proxies Cordis hands out for services. */
const IDENTITY = Symbol.for('stratagate-py.compaction-engine.identity')

/**
 * @param {Function} Base - DSH's BasicCompactionEngine (or a stand-in with the same methods)
 * @param {Function} ManualCompactionError - dsh-compaction's error class (code, message, options)
 * @param {() => object|undefined} [engineOf] - the context engine (the published one by default)
 */
export function makeEngineClass(Base, ManualCompactionError, engineOf = currentContextEngine) {
  return class StrataGateCompactionEngine extends Base {
    constructor(ctx, config) {
      super(ctx, config)
      this[IDENTITY] = randomUUID()
      ctx?.logger?.info?.('StrataGate compaction engine active: the context engine plans first, stock compaction is the last resort')
    }

    /**
     * Whether this instance is the agent's compaction. In the web profile a session's agent compacts inside its
     * preset (its own `compaction` service, possibly ours again); the host row must then stay out, or two engines
     * (and two stock summaries) would act on one session. The agent-scoped context names the one it uses; Cordis
     * returns services behind per-context proxies, so the instances are compared by an identity property.
     */
    owns(agent) {
      let own
      try {
        own = agent?.ctx?.get?.('compaction')
      } catch {
        return true
      }
      if (own === undefined || own === this || (own[IDENTITY] !== undefined && own[IDENTITY] === this[IDENTITY])) return true
      this.outside ??= new WeakSet()
      if (agent.session && !this.outside.has(agent.session)) {
        this.outside.add(agent.session)
        this.ctx?.logger?.info?.(`compaction of session ${agent.session.id} belongs to its agent preset; this row stays out`)
      }
      return false
    }

    async compactIfNeeded(agent, trigger, signal) {
      if (!this.owns(agent)) return null
      const engine = engineOf()
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
      // `/compact` reaches the compaction of the command's own realm, so no ownership check is needed here.
      const engine = engineOf()
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
}
