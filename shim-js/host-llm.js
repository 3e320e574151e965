// Answer the sidecar's `host.llm.complete` with DSH's own model access (`ctx.llm.stream`), so memory jobs use the
// user's provider, credentials and retry policy. No @deepseek-ai/* import: the request messages are built by hand
// in DSH's `Message` shape ({id, role, content: ContentBlock[], source}) and the `StreamChunk`s are folded here
// the way dsh-llm's BlockAssembler does.
//
// Forcing the tool: DSH's GenerateOptions has no tool_choice (0.1.0-rc.8 and 0.1.1-rc.2), so the one tool is
// offered as the only tool and the sidecar's `tool_instruction` (the words telling the model it must call it) is
// appended to the system text. The sidecar also accepts the JSON in the text and sends a correction round when the
// call is missing (docs/protocol.md).

import { randomUUID } from 'node:crypto'

export const PLUGIN_SOURCE = Object.freeze({ kind: 'plugin', plugin: 'stratagate-py' })

/**
 * Translate `host.llm.complete` params into DSH GenerateOptions (without provider/model/reasoning, added by the caller).
 * @param {{messages: {role: string, content: string}[], tool?: {name, description, parameters}|null, tool_instruction?: string, max_tokens?: number}} params
 * @param {{provider: string, model: string}} route - used to attribute earlier assistant turns.
 */
export function buildGenerateOptions(params, route) {
  if (!params || !Array.isArray(params.messages)) throw Object.assign(new Error('host.llm.complete: params.messages must be an array'), { code: -32602 })
  const system = []
  const messages = []
  for (const m of params.messages) {
    const text = typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? '')
    if (m?.role === 'system') system.push(text)
    else if (m?.role === 'assistant') {
      messages.push({ id: randomUUID(), role: 'assistant', content: [{ type: 'text', text }], source: { kind: 'model', provider: route.provider, model: route.model } })
    } else {
      messages.push({ id: randomUUID(), role: 'user', content: [{ type: 'text', text }], source: PLUGIN_SOURCE })
    }
  }
  if (messages.length === 0) throw Object.assign(new Error('host.llm.complete: no user or assistant message to send'), { code: -32602 })
  const tool = params.tool && typeof params.tool === 'object' && params.tool.name ? params.tool : null
  let systemText = system.join('\n\n')
  const options = { messages, purpose: 'compaction' }
  if (tool) {
    if (typeof params.tool_instruction === 'string' && params.tool_instruction.trim()) systemText += `\n\n${params.tool_instruction}`
    options.tools = [{ name: String(tool.name), description: String(tool.description ?? ''), parameters: tool.parameters ?? { type: 'object' } }]
  }
  if (systemText.trim()) options.system = systemText.trimStart()
  if (Number.isInteger(params.max_tokens) && params.max_tokens > 0) options.maxTokens = params.max_tokens
  return options
}

/**
 * Fold DSH StreamChunks into {text, toolCalls, finish, usage} — BlockAssembler's rules: deltas accumulate per
 * block index in first-seen order, a `block-end` block wins over its deltas, `finish` sets the reason, and a
 * max-tokens finish drops tool calls (they may be cut off).
 */
export class ChunkFolder {
  constructor() {
    this.partials = new Map()
    this.finish = null
    this.usage = null
  }

  push(chunk) {
    if (!chunk || typeof chunk !== 'object') return
    const get = (index, blockType) => {
      let p = this.partials.get(index)
      if (!p) {
        p = { blockType, text: '', args: '', id: undefined, name: undefined, block: undefined }
        this.partials.set(index, p)
      }
      return p
    }
    switch (chunk.type) {
      case 'block-start':
        get(chunk.index, chunk.blockType)
        break
      case 'text-delta':
      case 'reasoning-delta': {
        const p = get(chunk.index, chunk.type === 'text-delta' ? 'text' : 'reasoning')
        if (!p.block) p.text += chunk.text ?? ''
        break
      }
      case 'tool-call-delta': {
        const p = get(chunk.index, 'tool-call')
        if (p.block) break
        if (chunk.id !== undefined) p.id = chunk.id
        if (chunk.name) p.name = chunk.name
        p.args += chunk.argumentsDelta ?? ''
        break
      }
      case 'block-end': {
        const p = get(chunk.index, chunk.block?.type)
        if (!p.block) p.block = chunk.block
        break
      }
      case 'usage':
        this.usage = chunk.usage ?? null
        break
      case 'finish':
        this.finish = chunk.reason ?? null
        break
      default:
        break
    }
  }

  blocks() {
    const out = []
    for (const p of this.partials.values()) {
      if (p.block) out.push(p.block)
      else if (p.blockType === 'text' || p.blockType === 'reasoning') out.push({ type: p.blockType, text: p.text })
      else if (p.blockType === 'tool-call') out.push({ type: 'tool-call', id: p.id, name: p.name ?? '', arguments: p.args })
    }
    return this.finish?.kind === 'max-tokens' ? out.filter((b) => b.type !== 'tool-call') : out
  }

  /** The `host.llm.complete` result (Completion) or a thrown Error for error/aborted finishes. */
  completion(model) {
    const finish = this.finish ?? { kind: 'stop' }
    if (finish.kind === 'error' || finish.kind === 'aborted') {
      const failure = finish.failure ?? {}
      const error = new Error(`DSH model call ${finish.kind === 'aborted' ? 'was aborted' : 'failed'}: ${failure.message ?? 'unknown error'}${failure.code ? ` (${failure.code})` : ''}`)
      error.code = -32000
      throw error
    }
    const blocks = this.blocks()
    const text = blocks.filter((b) => b.type === 'text').map((b) => b.text).join('')
    const toolCalls = blocks.filter((b) => b.type === 'tool-call').map((b) => ({ name: b.name, arguments: typeof b.arguments === 'string' ? b.arguments : JSON.stringify(b.arguments ?? null) }))
    const finishReason = { stop: 'stop', 'tool-calls': 'tool_calls', 'max-tokens': 'length' }[finish.kind] ?? String(finish.kind)
    return { text, tool_calls: toolCalls, finish_reason: finishReason, model: model ?? null }
  }
}

/**
 * Make the `host.llm.complete` handler.
 * @param {object} o
 * @param {() => any} o.llm - returns the DSH llm service (ctx.get('llm')) or undefined.
 * @param {() => {provider: string, model: string, sessionId?: string}|null} o.route - the route to use.
 * @param {number} [o.timeoutMs] - per call; below the sidecar's STRATAGATE_HOST_LLM_TIMEOUT (180 s).
 * @param {AbortSignal} [o.signal] - aborts every call (plugin unload).
 */
export function makeHostLlm({ llm, route, timeoutMs = 170_000, signal, log = {} }) {
  return async function complete(params) {
    const service = llm()
    if (!service || typeof service.stream !== 'function') {
      throw Object.assign(new Error('no model service in this DSH profile (the llm service is missing)'), { code: -32000 })
    }
    const r = route()
    if (!r?.provider || !r?.model) {
      throw Object.assign(new Error('no model configured in DSH: set a default model (agent-default-model) or the plugin options llmProvider/llmModel'), { code: -32000 })
    }
    const options = { provider: r.provider, model: r.model, ...buildGenerateOptions(params, r) }
    if (r.sessionId) options.sessionId = r.sessionId
    if (await supportsReasoningOff(service, r)) options.reasoningEffort = 'off'
    const signals = [AbortSignal.timeout(timeoutMs)]
    if (signal) signals.push(signal)
    options.signal = AbortSignal.any(signals)
    const folder = new ChunkFolder()
    for await (const chunk of service.stream(options)) folder.push(chunk)
    const result = folder.completion(r.model)
    log.info?.(`host.llm.complete via ${r.provider}/${r.model}: ${result.finish_reason}, ${result.tool_calls.length} tool call(s)`)
    return result
  }
}

/** reasoningEffort is adapter-owned: send 'off' only when the exact model lists it (else the call is rejected). */
async function supportsReasoningOff(service, route) {
  if (typeof service.resolveModelInfo !== 'function') return false
  try {
    const info = await service.resolveModelInfo(route.provider, route.model)
    return Array.isArray(info?.reasoning?.efforts) && info.reasoning.efforts.some((e) => e?.id === 'off')
  } catch {
    return false
  }
}
