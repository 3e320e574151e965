// StrataGate-Py for DeepSeek Harness: the Cordis plugin. Wiring only — every piece lives in its own module and
// all memory logic lives in the Python sidecar (docs/protocol.md).
//
// No static import of any @deepseek-ai/* package (a `link:` install could not resolve them): tools use raw JSON
// Schema, model requests are hand-built, and the config is validated by config.js instead of a schemastery schema.
// Only the context engine's checkpoint source is imported, lazily, from @deepseek-ai/dsh-compaction (context.js),
// and the separate compaction row (compaction.js) subclasses DSH's engine, falling back to the stock one.

import { readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { makeAssembleListener, makeMemoryRowListener, MemoryRows, StepInbox } from './activation.js'
import { readHostVersions } from './host-version.js'
import { terminalWriter } from './install-progress.js'
import { normalizeConfig } from './config.js'
import { ContextEngine, makeModelOf, setContextEngine } from './context.js'
import { makeLogger } from './logger.js'
import { memoryCommand, uiLanguage } from './memory-command.js'
import { callerRequest } from './namespaces.js'
import { makeTurnStoppingListener } from './nudge.js'
import { PRESET_ID, writeStrataGatePreset } from './preset.js'
import { Runtime } from './runtime.js'
import { makeMemoryService, provideMemoryService } from './service.js'
import { FALLBACK_TOOLS, ToolSet } from './tools.js'
import { TurnBuffer } from './turns.js'
import { registerContextRoutes, registerInstallRetryRoute, registerMemoryRoute, registerStatusRoute } from './web.js'

export const name = 'stratagate-py'
export const inject = ['tools', 'systemPrompt']

const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/**
 * The system-prompt section, written by the sidecar (`stratagate prompt-section` > plugin/prompt.json; a test keeps
 * them identical) and read here so it is registered before Python even starts.
 */
export const PROMPT_SECTION = Object.freeze(JSON.parse(readFileSync(new URL('../plugin/prompt.json', import.meta.url), 'utf8')))
export const PROTOCOL_SECTION = PROMPT_SECTION.text

export function apply(ctx, rawConfig) {
  const log = makeLogger(ctx.logger)
  const { config, warnings } = normalizeConfig(rawConfig)
  for (const warning of warnings) log.warn(`config: ${warning}`)
  log.debug(`config: ${JSON.stringify(config)}`)

  const tools = new ToolSet((definition) => ctx.tools.register(definition), (toolName, args, exec) => runtime.callTool(toolName, args, exec), log)
  // The DSH we run in: read here, judged by the sidecar (host.check), reported in the log, the terminal and the page.
  const hostVersions = readHostVersions()
  const runtime = new Runtime({
    config,
    packageRoot: PACKAGE_ROOT,
    log,
    llm: () => ctx.get('llm'),
    defaultModel: () => ctx.get('agentDefaultModel'),
    onTools: (specs) => {
      if (tools.apply(specs)) log.info(`memory tools registered from the sidecar: ${tools.names.join(', ')}`)
    },
    onReady: (sidecar) => reportHost(sidecar, hostVersions, log, terminalWriter()),
  })

  // Tools: registered now from the known list so the first step already has them (and so the model gets a clear
  // error when Python is missing); replaced by the sidecar's own tools.list when it differs.
  tools.apply(FALLBACK_TOOLS)

  // Usage protocol, static (changing it would invalidate the prompt cache).
  ctx.systemPrompt.section({ name: PROMPT_SECTION.name, order: PROMPT_SECTION.order, text: PROMPT_SECTION.text })

  // Per-step recall: the sidecar's byte-stable memory text as a runtime context. The query needs the step's new input,
  // which DSH claims from the inbox (and announces) before assembling but logs only after (activation.js header).
  // What the step recalled also goes to the chat as a StrataGate Memory row (activation.js header).
  const stepInbox = new StepInbox()
  const memoryRows = new MemoryRows()
  ctx.on('agent/inbox/claimed', (payload) => stepInbox.record(payload))
  ctx.on(
    'system-prompt/assemble',
    makeAssembleListener({
      namespaceOf: (session, signal) => runtime.namespaceOf(session, signal),
      render: (params, signal, timeoutMs) => runtime.render(params, signal, timeoutMs),
      available: () => runtime.recallAvailable(),
      timeoutMs: () => runtime.recallBudget(),
      stepInbox,
      rows: memoryRows,
      lang: () => uiLanguage(ctx.get('settings')),
      log,
    }),
  )
  ctx.on('agent/pre-step', makeMemoryRowListener({ rows: memoryRows }))

  // Context engine (shim-js/context.js): the sidecar plans which parts of the session's history are replaced by
  // cards, block views or folds; the shim lands them. Published for our compaction row (compaction-engine.js).
  const contextCall = (method, params, options) => runtime.contextCall(method, params, options)
  const contextEngine = new ContextEngine({
    call: contextCall,
    namespaceOf: (session, signal) => runtime.namespaceOf(session, signal),
    modelOf: makeModelOf({ llm: () => ctx.get('llm'), defaultModel: () => ctx.get('agentDefaultModel'), tokenMeter: () => ctx.get('tokenMeter') }),
    available: () => runtime.recallAvailable(),
    timeoutMs: () => config.contextTimeoutMs,
    meter: () => ctx.get('tokenMeter'),
    log,
  })
  ctx.effect(() => setContextEngine(contextEngine), 'stratagate context engine')

  // Turn end (`agent/turn-stopping`, serial, the turn still open): first the nudge (one reminder per turn when
  // memory retrievals were left without assessment or use receipt), then the landing. If the nudge steered, the turn
  // goes on and stops again later: landing waits for that real end, so the steered step still reuses the cached
  // prefix and the batch lands once.
  const nudge = makeTurnStoppingListener({
    namespaceOf: (session, signal) => runtime.namespaceOf(session, signal),
    openBatches: (params, signal, timeoutMs) => runtime.openBatches(params, signal, timeoutMs),
    available: () => runtime.recallAvailable(),
    timeoutMs: () => runtime.recallBudget(),
    log,
  })
  ctx.on('agent/turn-stopping', async (payload) => {
    if (await nudge(payload)) return
    await contextEngine.run(payload?.agent, 'turn-end', { signal: payload?.signal, turn: payload?.turn })
  })

  // Before a step: the sidecar decides whether anything lands mid-turn (quality mode, or above the pressure line).
  // Our compaction row asks the same from `compactIfNeeded`; the engine plans an unchanged session once per phase,
  // so this listener only matters where that row is not mounted (e.g. a preset with the stock engine).
  ctx.on('agent/pre-step', async (payload, next) => {
    if (payload?.agent && !payload.signal?.aborted) await contextEngine.run(payload.agent, 'pre-step', { signal: payload.signal, turn: payload.turn })
    return next()
  })

  // Canonical tool values (the registry's JSON, richer than the rendered text) for capture, by call id.
  const canonical = new Map()
  ctx.on('tools/result', (exec, result) => {
    if (!exec || result?.isError !== false || exec.parent) return
    canonical.set(String(exec.callId), { value: result.value })
    if (canonical.size > 512) canonical.delete(canonical.keys().next().value)
  })

  // Capture: buffer each turn's raw events, spool them at turn/end, deliver them; the sidecar folds them.
  const turns = new TurnBuffer()
  const canonicalOf = (callId) => {
    const hit = canonical.get(callId)
    canonical.delete(callId)
    return hit
  }
  ctx.on('session/event', (session, event) => {
    try {
      const turn = turns.accept(session, event)
      if (turn) runtime.capture(session, turn, canonicalOf)
    } catch (error) {
      log.error(`capture failed for ${event?.type} in ${session?.id}: ${error?.stack ?? error}`)
    }
  })
  ctx.on('session/disposed', (session) => {
    turns.forget(session)
    stepInbox.forget(session)
    memoryRows.forget(session)
    contextEngine.forget(session)
    try {
      runtime.closeSession(session) // the sidecar seals the session's last turns into a (short) block
    } catch (error) {
      log.error(`could not spool the close of ${session?.id}: ${error?.stack ?? error}`)
    }
  })

  const lang = () => uiLanguage(ctx.get('settings'))
  const sessionOf = (id) => {
    try {
      return ctx.get('sessions')?.get?.(id)
    } catch {
      return undefined
    }
  }

  // The memory as a service for other plugins (`stratagateMemory`, and `crossSessionMemory` for plugins written
  // for dsh-memory-connect): every method forwards to the sidecar's `service.*` (shim-js/service.js).
  const service = makeMemoryService({
    call: (method, params) => runtime.serviceCall(method, params),
    callerOf: (subject) => callerRequest(config, subject, { sessionOf, cwd: process.cwd() }),
  })
  provideMemoryService(ctx, service, log)

  // Status, install retry, context and Memory page routes, only where a web server exists (the web profile).
  ctx.plugin({
    name: 'stratagate-py-web',
    inject: ['webServer'],
    apply: (web) => {
      // Web sessions run their agent from a preset: write the StrataGate preset (the bundle patch makes it the
      // default) so they get our compaction engine (preset.js).
      const preset = writeStrataGatePreset()
      if (preset.ok) log.info(`agent preset '${PRESET_ID}' ${preset.changed ? 'written' : 'up to date'} (${preset.path})`)
      else log.error(`could not write the agent preset '${PRESET_ID}': ${preset.error}; web sessions need another default preset (settings.yaml agent-presets.default)`)
      registerStatusRoute(web, () => runtime.status(), log)
      registerInstallRetryRoute(web, () => runtime.retry(), log)
      registerMemoryRoute(web, contextCall, log)
      registerContextRoutes(
        web,
        {
          sessionOf,
          namespaceOf: (session) => runtime.namespaceOf(session),
          call: contextCall,
          lang,
        },
        log,
      )
    },
  })

  // `/memory`, where DSH's command registry exists.
  ctx.plugin({
    name: 'stratagate-py-commands',
    inject: ['commands'],
    apply: (commands) => {
      commands.effect(
        () =>
          commands.commands.register(
            memoryCommand({ namespaceOf: (session, signal) => runtime.namespaceOf(session, signal), call: contextCall, lang, afterward: (session) => contextEngine.resend(session) }),
          ),
        'stratagate /memory',
      )
    },
  })

  // Lifecycle: start in the background; one disposer does the ordered teardown.
  ctx.effect(() => {
    runtime.start().catch((error) => log.error(`start failed: ${error?.stack ?? error}`))
    return async () => {
      await runtime.stop()
      tools.dispose()
    }
  }, 'stratagate sidecar')
}

/** The sidecar's verdict on this DSH (host.check), logged; an unsupported host is also told in the terminal. */
export async function reportHost(sidecar, versions, log, terminal) {
  const verdict = await sidecar.call('host.check', versions, { timeoutMs: 5000 }).catch((error) => {
    log.debug(`host.check failed: ${error?.message ?? error}`)
    return null
  })
  if (!verdict) return null
  if (verdict.supported === false) {
    log.warn(`host: ${verdict.message}`)
    terminal(`StrataGate: ${verdict.message}`)
  } else if (verdict.message) log.info(`host: ${verdict.message}`)
  else log.info(`host: DSH ${verdict.dsh} (Cordis ${verdict.cordis}) is supported`)
  return verdict
}
