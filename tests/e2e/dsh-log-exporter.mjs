// Test-only Cordis plugin: DSH's logger only buffers by default; this copies every log record to stderr so
// a failing e2e test shows why (a plugin that did not load, a tool that threw, ...). Loaded with --patch.
import { inspect } from 'node:util'

export const name = 'stratagate-e2e-log-exporter'

function line(record) {
  const { type = '', name = '', content, args } = record ?? {}
  const body = typeof content === 'string' ? content : inspect(content ?? args ?? record, { depth: 4, breakLength: 160 })
  return `[dsh-log ${new Date().toISOString().slice(11, 23)}] ${type} ${name}: ${body}\n`
}

export function apply(ctx) {
  for (const record of ctx.logger.buffer ?? []) process.stderr.write(line(record))
  ctx.logger.exporter({ colors: 0, export: (record) => process.stderr.write(line(record)) })
}
