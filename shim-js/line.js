// Keep a request below the sidecar's line limit (STRATAGATE_MAX_LINE_BYTES, default 8 MiB; a longer line is not
// processed). A transport bound, not a memory decision: it knows nothing of turns, only of JSON string leaves,
// and cuts the longest ones first with a visible marker. The sidecar applies its own capture limits afterwards.

/** The line budget: the sidecar's limit less room for the envelope. */
export function lineBudget(env = process.env) {
  const limit = Number(env.STRATAGATE_MAX_LINE_BYTES)
  const DEFAULT = 8 * 1024 * 1024
  return (Number.isInteger(limit) && limit > 0 ? Math.min(DEFAULT, limit) : DEFAULT) - 4096
}

const size = (value) => Buffer.byteLength(JSON.stringify(value), 'utf8')

function cutLeaves(value, limit, marker) {
  if (typeof value === 'string') return value.length > limit ? `${value.slice(0, limit)}\n[…${value.length - limit} more characters ${marker}]` : value
  if (Array.isArray(value)) return value.map((v) => cutLeaves(v, limit, marker))
  if (value && typeof value === 'object') {
    const out = {}
    for (const [k, v] of Object.entries(value)) out[k] = cutLeaves(v, limit, marker)
    return out
  }
  return value
}

/**
 * `value` itself when its JSON fits `maxBytes`, else a copy whose longest strings are cut (halving the cut length
 * from 256 Ki characters down to 256) until it fits or cannot shrink further.
 */
export function fitLine(value, maxBytes) {
  if (size(value) <= maxBytes) return value
  let out = value
  for (let limit = 256 * 1024; limit >= 256 && size(out) > maxBytes; limit = Math.floor(limit / 2)) {
    out = cutLeaves(out, limit, `cut by the StrataGate DSH shim: the request exceeded the ${maxBytes}-byte line budget`)
  }
  return out
}

/** Cut every string leaf to `limit` characters, without a marker (a reader that uses only a prefix). */
export function clipStrings(value, limit) {
  if (typeof value === 'string') return value.length > limit ? value.slice(0, limit) : value
  if (Array.isArray(value)) return value.map((v) => clipStrings(v, limit))
  if (value && typeof value === 'object') {
    const out = {}
    for (const [k, v] of Object.entries(value)) out[k] = clipStrings(v, limit)
    return out
  }
  return value
}
