// Per-step memory: after DSH assembled the prompt, ask the sidecar for this session's memory text
// (`activation.render`) and add it as the runtime context `stratagate:memory`. The sidecar renders byte-stable
// text, so DSH only re-sends the runtime-context snapshot when memory actually changed. Bounded by
// activationTimeoutMs; any failure or timeout means "no memory this step", never a failed step.

import { isSubagentSession, latestHumanText, sessionIdOf } from './fold.js'

export const CONTEXT_NAME = 'stratagate:memory'
/** DSH interpolates `{{name}}` in context text strictly (unknown names throw), so literal `{{` is routed via a variable. */
export const LBRACE_VARIABLE = 'stratagate_lbrace'

/** Make memory text safe for DSH's strict `{{variable}}` interpolation; byte-identical after rendering. */
export function escapeForPrompt(text) {
  return text.includes('{{') ? text.replaceAll('{{', `{{${LBRACE_VARIABLE}}}`) : text
}

/** Add the memory context to an assembly (returns the assembly unchanged for empty text). */
export function withMemory(assembled, text) {
  if (!text) return assembled
  const escaped = escapeForPrompt(text)
  const out = { ...assembled, contexts: [...(assembled.contexts ?? []), { name: CONTEXT_NAME, text: escaped }] }
  if (escaped !== text) out.variables = { ...(assembled.variables ?? {}), [LBRACE_VARIABLE]: '{{' }
  return out
}

/** Run `fn(signal)` with a deadline; resolve `fallback` on timeout or error. */
export async function withDeadline(fn, timeoutMs, fallback, onError) {
  const controller = new AbortController()
  let timer
  const deadline = new Promise((resolve) => {
    timer = setTimeout(() => {
      controller.abort(new Error(`timed out after ${timeoutMs} ms`))
      resolve(fallback)
    }, timeoutMs)
  })
  try {
    return await Promise.race([
      Promise.resolve()
        .then(() => fn(controller.signal))
        .catch((error) => {
          onError?.(error)
          return fallback
        }),
      deadline,
    ])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * The `system-prompt/assemble` listener.
 * @param {object} o
 * @param {(session: object, signal: AbortSignal) => Promise<string>} o.namespaceOf
 * @param {(params: object, signal: AbortSignal, timeoutMs: number) => Promise<{text: string}>} o.render
 * @param {() => boolean} o.available - false when the sidecar is failed/unavailable (skip at once).
 * @param {() => number} o.timeoutMs
 */
export function makeAssembleListener({ namespaceOf, render, available, timeoutMs, log = {} }) {
  return async function assemble(_assembly, context, next) {
    const assembled = await next()
    const session = context?.agent?.session
    if (!session || isSubagentSession(session) || !available()) return assembled
    const budget = timeoutMs()
    const text = await withDeadline(
      async (signal) => {
        const namespace = await namespaceOf(session, signal)
        const query = latestHumanText(session.events)
        const params = { namespace, session: sessionIdOf(session) }
        if (query) params.query = query
        const result = await render(params, signal, budget)
        return typeof result?.text === 'string' ? result.text : ''
      },
      budget,
      '',
      (error) => log.debug?.(`activation.render skipped: ${error?.message ?? error}`),
    )
    return withMemory(assembled, text)
  }
}
