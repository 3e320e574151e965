// Which memory space a session uses. The derivation itself lives in the sidecar (`namespace.resolve`); the shim
// only builds the request from the plugin config and the session's working directory, and caches the answer per
// session so every capture, recall and tool call of a session uses the same namespace.

import { sessionIdOf } from './fold.js'

/**
 * The `namespace.resolve` params for a session.
 * project: the session's working directory (`session.header.cwd`, set by DSH from the agent's meta.cwd; the
 * headless runner uses process.cwd()). A session without a cwd falls back to its own session namespace rather
 * than guessing a folder, so memories never leak between projects.
 */
export function resolveRequest(config, session) {
  const sid = sessionIdOf(session)
  if (config.namespaceMode === 'global') return { mode: 'global', name: config.globalNamespace }
  if (config.namespaceMode === 'project') {
    const cwd = session?.header?.cwd
    if (typeof cwd === 'string' && cwd.trim()) return { mode: 'project', cwd }
  }
  return { mode: 'session', session: sid }
}

/** A stable text key of a resolve request. */
export function requestKey(req) {
  return JSON.stringify([req.mode, req.cwd ?? null, req.session ?? null, req.name ?? null])
}

export class Namespaces {
  /** @param {(req: object, options: {signal?: AbortSignal, timeoutMs?: number}) => Promise<{namespace: string}>} resolve */
  constructor(resolve) {
    this.resolveFn = resolve
    /** @type {Map<string, string>} request key → namespace (successful answers only) */
    this.cache = new Map()
    /** @type {Map<string, Promise<string>>} */
    this.inflight = new Map()
  }

  /** Namespace for a resolve request (cached). */
  async forRequest(req, options = {}) {
    const key = requestKey(req)
    const hit = this.cache.get(key)
    if (hit) return hit
    let p = this.inflight.get(key)
    if (!p) {
      p = Promise.resolve()
        .then(() => this.resolveFn(req, options))
        .then((r) => {
          if (typeof r?.namespace !== 'string' || !r.namespace) throw new Error('namespace.resolve returned no namespace')
          this.cache.set(key, r.namespace)
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
