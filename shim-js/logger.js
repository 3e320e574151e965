// One logger for the shim: DSH's Cordis logger (buffered by DSH; shown with a log exporter) plus, when
// STRATAGATE_SHIM_LOG names a file, a plain-text copy there. Keeps the last warnings for the status route.

import { appendFileSync } from 'node:fs'

export function makeLogger(cordisLogger, { file = process.env.STRATAGATE_SHIM_LOG, keep = 20 } = {}) {
  const recent = []
  const emit = (level, message) => {
    const text = String(message)
    if (level === 'warn' || level === 'error') {
      recent.push({ at: new Date().toISOString(), level, message: text })
      if (recent.length > keep) recent.shift()
    }
    try {
      cordisLogger?.[level]?.(text)
    } catch {}
    if (file) {
      try {
        appendFileSync(file, `${new Date().toISOString()} ${level.toUpperCase()} ${text}\n`)
      } catch {}
    }
  }
  return {
    info: (m) => emit('info', m),
    warn: (m) => emit('warn', m),
    error: (m) => emit('error', m),
    debug: (m) => emit('debug', m),
    recent,
  }
}
