// Deliver finished turns to the sidecar in order, through the spool: append (durable) → resolve namespace →
// `turn.capture_raw` (the sidecar folds the raw events) → ack. A turn leaves the spool only when the sidecar
// acknowledged it (`duplicate: true` and "nothing to store" count). Records spooled by earlier versions hold
// already-folded params and are delivered with `turn.capture`.
// Transient failures (sidecar starting, crashed, busy, disk full) are retried; a turn the sidecar rejects as
// invalid (-32602) is moved to spool/rejected.jsonl so it cannot block the turns behind it.
// A session DSH disposed is spooled as a close record (`session.close`) behind that session's turns, so the sidecar
// seals the session's open tail once every turn of it is stored.

import { fitLine, lineBudget } from './line.js'
import { requestKey } from './namespaces.js'
import { RpcError } from './sidecar-process.js'

const INVALID_PARAMS = -32602
const METHOD_NOT_FOUND = -32601
const MAX_ATTEMPTS = 5

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref?.())

/** Spool id of a capture record: its session turn (or, for an earlier version's record, its receipt) and request. */
export function captureId(rec) {
  const turn = rec.close ? `${rec.close.session}#close` : rec.raw ? `${rec.raw.session}#${rec.raw.turn}` : rec.params.receipt
  return `${turn}|${requestKey(rec.resolve)}`
}

/** What a record is called in logs. */
function describe(rec) {
  if (rec.close) return `close of session ${rec.close.session}`
  return rec.raw ? `turn ${rec.raw.turn} of session ${rec.raw.session}` : rec.params.receipt
}

/** The RPC call that delivers a record: raw events (folded by the sidecar), a session's close, or an earlier
 * version's folded params. */
export function captureCall(rec, namespace, env = process.env) {
  if (rec.close) return { method: 'session.close', params: { namespace, session: rec.close.session } }
  if (!rec.raw) return { method: 'turn.capture', params: fitLine({ namespace, ...rec.params }, lineBudget(env)) }
  const { turn: _turn, ...raw } = rec.raw
  return { method: 'turn.capture_raw', params: fitLine({ namespace, ...raw }, lineBudget(env)) }
}

export class CaptureQueue {
  /**
   * @param {object} o
   * @param {import('./spool.js').Spool} o.spool
   * @param {{state: string, whenReady: Function, call: Function}} o.sidecar
   * @param {(req: object) => Promise<string>} o.namespace - namespace for a resolve request.
   * @param {(ack: object, rec: object) => void} [o.onCaptured]
   */
  constructor({ spool, sidecar, namespace, log = {}, onCaptured = () => {}, backoffMs = 1000, env = process.env }) {
    this.env = env
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
    /** @type {Set<{ids: Set<string>, done: () => void}>} callers waiting until given records were tried */
    this.triedWaiters = new Set()
  }

  get depth() {
    return this.spool.depth
  }

  /** Spool a turn ({resolve, raw: {session, turn, events, canonical, origin, capture_subagents}}) or a session's close ({resolve, close: {session}}) and deliver it. Throws only if the spool cannot be written. */
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

  /**
   * Read-your-writes for a tool call: resolve once every turn pending NOW has been tried once (stored, refused, or
   * failed and waiting for its retry), or when delivery cannot proceed (sidecar not ready, queue stopped), or after
   * `timeoutMs` (the caller's own budget). Never resolves merely because time passed while delivery is progressing
   * normally, so a slow sidecar start cannot make a search miss the turn before it.
   */
  tried(timeoutMs = 30_000) {
    const ids = new Set(this.spool.pending().map((p) => p.id))
    if (ids.size === 0 || this.stopped) return Promise.resolve(true)
    return new Promise((resolve) => {
      const waiter = {
        ids,
        done: () => {
          clearTimeout(timer)
          this.triedWaiters.delete(waiter)
          resolve(waiter.ids.size === 0)
        },
      }
      const timer = setTimeout(waiter.done, timeoutMs)
      timer.unref?.()
      this.triedWaiters.add(waiter)
      this.kick()
    })
  }

  noteTried(id) {
    for (const waiter of [...this.triedWaiters]) {
      waiter.ids.delete(id)
      if (waiter.ids.size === 0) waiter.done()
    }
  }

  releaseWaiters() {
    for (const waiter of [...this.triedWaiters]) waiter.done()
  }

  stop() {
    this.stopped = true
    this.releaseWaiters()
  }

  async work() {
    while (!this.stopped) {
      const next = this.spool.pending()[0]
      if (!next) return
      if (this.sidecar.state !== 'ready') {
        try {
          await this.sidecar.whenReady({ timeoutMs: 0 })
        } catch {
          this.releaseWaiters()
          return // failed or stopped: the records stay spooled for the next start
        }
        continue
      }
      try {
        const namespace = await this.namespace(next.rec.resolve)
        const { method, params } = captureCall(next.rec, namespace, this.env)
        const ack = await this.sidecar.call(method, params, { timeoutMs: 60_000 })
        this.spool.ack(next.id)
        this.attempts.delete(next.id)
        this.noteTried(next.id)
        if (next.rec.close) continue // not a turn: nothing captured, nobody to tell
        if (ack?.captured !== false) this.captured++
        try {
          this.onCaptured(ack, next.rec)
        } catch {}
      } catch (error) {
        if (next.rec.close && error instanceof RpcError && error.code === METHOD_NOT_FOUND) {
          this.spool.ack(next.id) // a sidecar without session.close: its idle sweep seals the tail instead
          this.noteTried(next.id)
          continue
        }
        const attempts = (this.attempts.get(next.id) ?? 0) + 1
        this.attempts.set(next.id, attempts)
        this.lastError = `capture of ${describe(next.rec)}: ${error.message}`
        if (error instanceof RpcError && (error.code === INVALID_PARAMS || attempts >= MAX_ATTEMPTS)) {
          this.log.warn?.(`${this.lastError}; moved to spool/rejected.jsonl (not retried)`)
          this.spool.drop(next.id, error.message)
          this.attempts.delete(next.id)
          this.noteTried(next.id)
          continue
        }
        this.log.warn?.(`${this.lastError}; will retry`)
        this.noteTried(next.id)
        await sleep(Math.min(30_000, this.backoffMs * 2 ** (attempts - 1)))
      }
    }
  }
}
