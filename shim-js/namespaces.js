// Which memory space a session uses is the sidecar's decision (`namespace.for_session`, with its fallback for a
// session without a usable working directory). The shim only forwards the plugin's mode and the session's facts,
// and caches the answer per request so every capture, recall and tool call of a session uses the same namespace.

import { sessionIdOf } from './turns.js'

/**
 * The `namespace.for_session` params for a session: the plugin's mode, the session id, and its working directory
 * (`session.header.cwd`, set by DSH from the agent's meta.cwd; the headless runner uses process.cwd()).
 */
export function resolveRequest(config, session) {
  const req = { mode: config.namespaceMode, session: sessionIdOf(session) }
  const cwd = session?.header?.cwd
  if (typeof cwd === 'string') req.cwd = cwd
  if (config.globalNamespace) req.name = config.globalNamespace
  return req
}

/**
 * The `caller` of a memory-service call (shim-js/service.js): a session object as `resolveRequest` describes it; a
 * session id, looked up with `sessionOf` (an id DSH does not know stays the caller's session, in `cwd`); nothing:
 * DSH's working directory `cwd`. The sidecar keys the namespace from it as `namespace.for_session` does.
 */
export function callerRequest(config, subject, { sessionOf = () => undefined, cwd } = {}) {
  const session = typeof subject === 'string' ? sessionOf(subject) : subject
  if (session && typeof session === 'object') return resolveRequest(config, session)
  const req = { mode: config.namespaceMode }
  if (typeof subject === 'string' && subject) req.session = subject
  if (typeof cwd === 'string') req.cwd = cwd
  if (config.globalNamespace) req.name = config.globalNamespace
  return req
}

/** A stable text key of a request. Requests spooled by earlier versions (no `session`) use `namespace.resolve`. */
export function requestKey(req) {
  return JSON.stringify([req.mode, req.cwd ?? null, req.session ?? null, req.name ?? null, methodFor(req)])
}

/** Earlier versions spooled `namespace.resolve` requests ({mode:'project', cwd} …) without the session. */
export function methodFor(req) {
  return typeof req?.session === 'string' && req.session ? 'namespace.for_session' : 'namespace.resolve'
}

export class Namespaces {
  /** @param {(method: string, req: object, options: {signal?: AbortSignal, timeoutMs?: number}) => Promise<{namespace: string}>} resolve */
  constructor(resolve) {
    this.resolveFn = resolve
    /** @type {Map<string, string>} request key → namespace (successful answers only) */
    this.cache = new Map()
    /** @type {Map<string, Promise<string>>} */
    this.inflight = new Map()
  }

  /** Namespace for a request (cached). */
  async forRequest(req, options = {}) {
    const key = requestKey(req)
    const hit = this.cache.get(key)
    if (hit) return hit
    let p = this.inflight.get(key)
    if (!p) {
      p = Promise.resolve()
        .then(() => this.resolveFn(methodFor(req), req, options))
        .then((r) => {
          if (typeof r?.namespace !== 'string' || !r.namespace) throw new Error('the sidecar returned no namespace')
          this.cache.set(key, r.namespace)
          if (this.cache.size > 1024) this.cache.delete(this.cache.keys().next().value)
          return r.namespace
        })
        .finally(() => this.inflight.delete(key))
      this.inflight.set(key, p)
    }
    return p
  }

  forSession(config, session, options) {
    return this.forRequest(resolveRequest(config, session), options)
  }
}
