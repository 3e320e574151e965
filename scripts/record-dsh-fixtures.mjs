// Recorder plugin for scripts/record-dsh-fixtures.py (loaded with --patch): writes what a plugin receives from the
// real DSH, one JSON line per payload, to `config.out`: every `session/event` (with the session's id and origin,
// as the shim's capture reads them), every `tools/result` (the execution's identity and the frozen result, as
// the shim's canonical-value map reads them), and the `agent/inbox/claimed` and `agent/turn-stopping` payloads. Observation only, except that with `config.answer` it plays the
// human for `ask_user_question` (the web UI's part: a `userQuestions` provider choosing each question's first
// option, or answering `config.answer` when there are none).
import { appendFileSync } from 'node:fs'

export const name = 'stratagate-fixture-recorder'

function jsonSafe(value) {
  const seen = new WeakSet()
  return JSON.parse(
    JSON.stringify(value, (_key, v) => {
      if (typeof v === 'bigint') return v.toString()
      if (v && typeof v === 'object') {
        if (seen.has(v)) return '[circular]'
        seen.add(v)
      }
      return v
    }),
  )
}

/** A hook payload's own fields: the live agent as its session's id and origin, a signal as a marker. */
function payloadOf(payload) {
  const out = {}
  for (const [key, value] of Object.entries(payload ?? {})) {
    if (value && typeof value === 'object' && 'session' in value && typeof value.session === 'object') {
      out[key] = { session: { id: String(value.session?.id ?? ''), origin: value.session?.header?.origin ?? null } }
    } else if (typeof AbortSignal !== 'undefined' && value instanceof AbortSignal) out[key] = '[AbortSignal]'
    else out[key] = value
  }
  return out
}

export function apply(ctx, config) {
  const out = String(config?.out ?? '')
  if (!out) throw new Error('stratagate-fixture-recorder needs config.out')
  const write = (record) => appendFileSync(out, `${JSON.stringify(jsonSafe(record))}\n`)

  ctx.on('session/event', (session, event) => {
    write({
      hook: 'session/event',
      session: { id: String(session?.id ?? session?.header?.id ?? ''), origin: session?.header?.origin ?? null },
      event,
    })
  })
  if (config?.answer !== undefined) {
    ctx.plugin({
      name: 'stratagate-fixture-recorder-answers',
      inject: ['userQuestions'],
      apply(sub) {
        sub.effect(() =>
          sub.userQuestions.registerProvider({
            async ask(request) {
              const answers = request.questions.map((q) =>
                q.options?.length ? { id: q.id, selected: [q.options[0].label] } : { id: q.id, selected: [], custom: String(config.answer) },
              )
              return { answers }
            },
          }),
        'fixture-recorder user-question provider')
      },
    })
  }
  // The agent hooks the shim listens to besides session/event and tools/result (shim-js/index.js).
  ctx.on('agent/inbox/claimed', (payload) => write({ hook: 'agent/inbox/claimed', payload: payloadOf(payload) }))
  ctx.on('agent/turn-stopping', (payload) => write({ hook: 'agent/turn-stopping', payload: payloadOf(payload) }))
  ctx.on('tools/result', (exec, result) => {
    write({
      hook: 'tools/result',
      exec: {
        callId: exec?.callId,
        rootCallId: exec?.rootCallId,
        name: exec?.name,
        arguments: exec?.arguments,
        parent: exec?.parent === undefined ? null : String(exec.parent),
        session: exec?.agent?.session?.id ?? null,
        origin: exec?.agent?.session?.header?.origin ?? null,
      },
      result,
    })
  })
}
