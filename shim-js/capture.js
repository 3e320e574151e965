// Deliver folded turns to the sidecar in order, through the spool: append (durable) → resolve namespace →
// `turn.capture` → ack. A turn leaves the spool only when the sidecar acknowledged it (`duplicate: true` counts).
// Transient failures (sidecar starting, crashed, busy, disk full) are retried; a turn the sidecar rejects as
// invalid (-32602) is moved to spool/rejected.jsonl so it cannot block the turns behind it.

import { requestKey } from './namespaces.js'
import { RpcError } from './sidecar-process.js'

const INVALID_PARAMS = -32602
const MAX_ATTEMPTS = 5

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref?.())

/** Spool id of a capture record: the receipt within its namespace request. */
export function captureId(rec) {
  return `${rec.params.receipt}|${requestKey(rec.resolve)}`
}

export class CaptureQueue {
  /**
   * @param {object} o
   * @param {import('./spool.js').Spool} o.spool
   * @param {{state: string, whenReady: Function, call: Function}} o.sidecar
   * @param {(req: object) => Promise<string>} o.namespace - namespace for a resolve request.
   * @param {(ack: object, rec: object) => void} [o.onCaptured]
   */
  constructor({ spool, sidecar, namespace, log = {}, onCaptured = () => {}, backoffMs = 1000 }) {
    this.spool = spool
    this.sidecar = sidecar
    this.namespace = namespace
    this.log = log
    this.onCaptured = onCaptured
    this.backoffMs = backoffMs
    this.running = null
    this.stopped = false
    this.attempts = new Map()
    this.lastError = null
    this.captured = 0
    this.idleWaiters = new Set()
  }

  get depth() {
    return this.spool.depth
  }

  /** Spool a folded turn ({resolve, params}) and start delivering. Throws only if the spool cannot be written. */
  enqueue(rec) {
    this.spool.append(captureId(rec), rec)
    this.kick()
  }

  /** Deliver whatever is pending (e.g. after a sidecar (re)start or at startup for replayed records). */
  kick() {
    if (this.running || this.stopped) return this.running
    this.running = this.work().finally(() => {
      this.running = null
      if (this.spool.depth === 0) for (const w of this.idleWaiters) w()
    })
    return this.running
  }

  /** Resolve when the spool is empty or `timeoutMs` passed (for dispose). */
  drain(timeoutMs = 2000) {
    if (this.spool.depth === 0) return Promise.resolve(true)
    this.kick()
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.idleWaiters.delete(done)
        resolve(this.spool.depth === 0)
      }
      const timer = setTimeout(done, timeoutMs)
      this.idleWaiters.add(done)
    })
  }

  stop() {
    this.stopped = true
  }

  async work() {
    while (!this.stopped) {
      const next = this.spool.pending()[0]
      if (!next) return
      if (this.sidecar.state !== 'ready') {
        try {
          await this.sidecar.whenReady({ timeoutMs: 0 })
        } catch {
          return // failed or stopped: the records stay spooled for the next start
        }
        continue
      }
      try {
        const namespace = await this.namespace(next.rec.resolve)
        const ack = await this.sidecar.call('turn.capture', { namespace, ...next.rec.params }, { timeoutMs: 60_000 })
        this.spool.ack(next.id)
        this.attempts.delete(next.id)
        this.captured++
        try {
          this.onCaptured(ack, next.rec)
        } catch {}
      } catch (error) {
        const attempts = (this.attempts.get(next.id) ?? 0) + 1
        this.attempts.set(next.id, attempts)
        this.lastError = `turn.capture ${next.rec.params.receipt}: ${error.message}`
        if (error instanceof RpcError && (error.code === INVALID_PARAMS || attempts >= MAX_ATTEMPTS)) {
          this.log.warn?.(`${this.lastError}; moved to spool/rejected.jsonl (not retried)`)
          this.spool.drop(next.id, error.message)
          this.attempts.delete(next.id)
          continue
        }
        this.log.warn?.(`${this.lastError}; will retry`)
        await sleep(Math.min(30_000, this.backoffMs * 2 ** (attempts - 1)))
      }
    }
  }
}
