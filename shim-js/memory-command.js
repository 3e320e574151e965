// `/memory` (DSH human command, `ctx.commands`, dsh-commands 0.1.0-rc.8): forwards the arguments and the UI
// language to the sidecar (`context.command`) and prints its text. The sidecar parses the arguments (status,
// detail [refs], recall, search <words>, purge, purge confirm, help) and words every answer about memory (events,
// blocks, graph, the last recall, jobs) and the context window; the shim only picks the language.

import { sessionIdOf } from './turns.js'

export const MEMORY_COMMAND = 'memory'

/**
 * The UI language, 'zh' or 'en': DSH's locale setting (`settings` namespace `locale`, field `preference`, written by
 * the web client's language switch; dsh-client-locale), else the process locale (LC_ALL, LC_MESSAGES, LANG), else en.
 */
export function uiLanguage(settings, env = process.env) {
  try {
    const preference = settings?.get?.('locale')?.preference
    if (preference === 'zh' || preference === 'en') return preference
  } catch {}
  const locale = env.LC_ALL || env.LC_MESSAGES || env.LANG || ''
  return /^zh/i.test(locale) ? 'zh' : 'en'
}

/**
 * The command definition for `ctx.commands.register`.
 * @param {object} o
 * @param {(session: object, signal?: AbortSignal) => Promise<string>} o.namespaceOf
 * @param {(method: string, params: object, options: object) => Promise<any>} o.call
 * @param {() => string} o.lang
 * @param {number} [o.timeoutMs]
 * @param {(session: object) => void} [o.afterward] - called after every answered command
 */
export function memoryCommand({ namespaceOf, call, lang, timeoutMs = 30_000, afterward = () => {} }) {
  return {
    name: MEMORY_COMMAND,
    description: 'StrataGate memory: what it holds and recalled, search, the context window',
    input: { hint: 'status | detail | recall | search <words> | purge [confirm] | help' },
    handler: async (invocation) => {
      const session = invocation?.agent?.session
      if (!session) return { kind: 'error', text: '/memory needs an agent session.' }
      try {
        const namespace = await namespaceOf(session, invocation.signal)
        const result = await call(
          'context.command',
          { namespace, session: sessionIdOf(session), args: String(invocation.rawInput ?? '').trim(), lang: lang() },
          { timeoutMs, signal: invocation.signal },
        )
        afterward(session) // a purge may have emptied the archive: the next plan sends the whole surface again
        const text = typeof result?.text === 'string' ? result.text : ''
        return text.trim() ? { kind: 'success', text } : { kind: 'success' }
      } catch (error) {
        if (invocation.signal?.aborted) return { kind: 'error', text: 'Cancelled.' }
        return { kind: 'error', text: `StrataGate memory: ${error?.message ?? error}` }
      }
    },
  }
}
