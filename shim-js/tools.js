// The memory tools, registered with DSH with the sidecar's raw JSON Schemas and executed via `tools.call`.
//
// Timing: DSH assembles the tool list at every step, so tools can be (re)registered at any time. The shim
// registers the three known tools at apply time from the static list below (so the very first step of a session
// already offers them, even while Python starts or when it is missing), then replaces them with the sidecar's own
// `tools.list` after each successful start if anything differs (names, descriptions or schemas).

/** The sidecar's tools.list as of stratagate 0.1.0 (docs/protocol.md), used until the sidecar answers. */
export const FALLBACK_TOOLS = Object.freeze([
  {
    name: 'memory_get_blocks',
    description:
      "List this session's sealed memory blocks (oldest first) with status, turn range and the view at each block's current decay level. Older blocks show shorter views; expand one to read more.",
    parameters: { additionalProperties: false, properties: {}, type: 'object' },
  },
  {
    name: 'memory_expand_block',
    description:
      'Read one memory block at a chosen level: 5 is the source transcript with every tool call and result, 4 near-verbatim, 3 pruned, 2 key facts, 1 summary, 0 title. Expanding a block of this session keeps it at that level for a while.',
    parameters: {
      additionalProperties: false,
      properties: {
        id: { description: "Block id from memory_get_blocks or memory_search_raw, e.g. 'blk_12'.", title: 'Id', type: 'string' },
        level: {
          anyOf: [{ type: 'integer' }, { type: 'string' }],
          default: 'next',
          description: "0–5 (5 = source transcript with every tool call), 'L0'–'L5', or 'next' for one level more.",
          title: 'Level',
        },
      },
      required: ['id'],
      type: 'object',
    },
  },
  {
    name: 'memory_search_raw',
    description:
      "Search the source messages of this project's memory (user, assistant, tool calls and results), best match first. Each hit names its block; expand that block at level 5 to read the full source.",
    parameters: {
      additionalProperties: false,
      properties: {
        query: { description: 'Words to look for in past messages.', maxLength: 2000, minLength: 1, title: 'Query', type: 'string' },
        limit: { default: 8, description: 'Maximum number of hits (1–50).', maximum: 50, minimum: 1, title: 'Limit', type: 'integer' },
      },
      required: ['query'],
      type: 'object',
    },
  },
])

/** Canonical output: any JSON object; the model sees it as pretty-printed JSON. */
export const OUTPUT = Object.freeze({
  schema: { type: 'object', additionalProperties: true },
  render: (_args, value) => [{ type: 'text', text: JSON.stringify(value, null, 2) }],
})

/** Stable comparison key of a tool list. */
export function toolsKey(specs) {
  return JSON.stringify([...specs].map((s) => [s.name, s.description, s.parameters]).sort((a, b) => (a[0] < b[0] ? -1 : 1)))
}

/** Keep only well-formed specs from tools.list. */
export function sanitizeSpecs(specs) {
  if (!Array.isArray(specs)) return []
  return specs.filter(
    (s) => s && typeof s.name === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(s.name) && s.name !== 'run_code' && s.parameters && typeof s.parameters === 'object',
  ).map((s) => ({ name: s.name, description: String(s.description ?? ''), parameters: s.parameters }))
}

function abortError(signal) {
  const reason = signal?.reason
  return reason instanceof Error ? reason : new Error('the memory tool call was cancelled')
}

/**
 * Build one DSH tool definition.
 * @param {{name, description, parameters}} spec
 * @param {(args: object, exec: object) => Promise<object>} invoke - performs the call (tools.call via the sidecar).
 */
export function toolDefinition(spec, invoke) {
  return {
    name: spec.name,
    description: spec.description,
    parameters: spec.parameters,
    output: OUTPUT,
    async execute(args, exec) {
      const signal = exec?.signal
      if (signal?.aborted) throw abortError(signal)
      const run = invoke(args && typeof args === 'object' ? args : {}, exec)
      if (!signal) return run
      let onAbort
      const aborted = new Promise((_, reject) => {
        onAbort = () => reject(abortError(signal))
        signal.addEventListener('abort', onAbort, { once: true })
      })
      try {
        return await Promise.race([run, aborted])
      } finally {
        signal.removeEventListener('abort', onAbort)
        run.catch(() => {}) // a late failure after abort is not unhandled
      }
    },
  }
}

/**
 * Holds the registered tool set and swaps it when the sidecar's list differs.
 * @param {(definition: object) => () => void} register - ctx.tools.register.
 * @param {(name: string, args: object, exec: object) => Promise<object>} invoke
 */
export class ToolSet {
  constructor(register, invoke, log = {}) {
    this.registerFn = register
    this.invoke = invoke
    this.log = log
    this.key = null
    this.disposers = []
    this.names = []
  }

  /** Register `specs` unless the same set is registered already. Returns true when it changed. */
  apply(specs) {
    const clean = sanitizeSpecs(specs)
    if (clean.length === 0) return false
    const key = toolsKey(clean)
    if (key === this.key) return false
    this.dispose()
    for (const spec of clean) {
      try {
        const dispose = this.registerFn(toolDefinition(spec, (args, exec) => this.invoke(spec.name, args, exec)))
        if (typeof dispose === 'function') this.disposers.push(dispose)
        this.names.push(spec.name)
      } catch (error) {
        this.log.warn?.(`could not register tool ${spec.name}: ${error?.message ?? error}`)
      }
    }
    this.key = key
    return true
  }

  dispose() {
    for (const dispose of this.disposers.splice(0)) {
      try {
        dispose()
      } catch {}
    }
    this.names = []
    this.key = null
  }
}
