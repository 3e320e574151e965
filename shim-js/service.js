// The memory as a Cordis service other DSH plugins inject: `stratagateMemory`, also provided as
// `crossSessionMemory` (dsh-memory-connect's name and API, so plugins written for it work unchanged).
//
// Every method only forwards: it names the caller (whose memory space: a session, else DSH's working directory)
// and passes its arguments, as given, to the sidecar's `service.*` method of the same job (docs/protocol.md, "The
// DSH memory service"). Defaults, checks, the mapping onto events and the `Memory` shape are the sidecar's.

export const SERVICE_NAMES = Object.freeze(['stratagateMemory', 'crossSessionMemory'])

/** The sidecar method behind each API method (positional arguments are named for the sidecar below). */
export const SERVICE_METHODS = Object.freeze({
  searchMemories: 'service.search',
  recallForSession: 'service.recall',
  storeMemory: 'service.store',
  getMemory: 'service.get',
  getStats: 'service.stats',
  triggerMaintenance: 'service.maintenance',
  getSchedulerStatus: 'service.scheduler',
  findSimilarMemories: 'service.similar',
  getConsolidationLog: 'service.consolidation_log',
})

/** An options argument as the sidecar's named params, without `sessionId` (it names the caller instead). */
function optionsOf(api, value, shape) {
  if (value === undefined) return {}
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(`${api} takes one options object ${shape}, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`)
  }
  const { sessionId: _caller, ...rest } = value
  return rest
}

/**
 * The service object.
 * @param {object} o
 * @param {(method: string, params: object) => Promise<any>} o.call - forwards one `service.*` call to the sidecar.
 * @param {(subject?: object|string) => object} o.callerOf - the `caller` params for a session, a session id, or
 *   nothing (DSH's working directory).
 * @param {object|string} [o.bound] - the session every call names when it names none itself (`forSession`).
 */
export function makeMemoryService({ call, callerOf, bound }) {
  const caller = (subject) => callerOf(subject ?? bound)
  const send = (api, subject, params) => call(SERVICE_METHODS[api], { caller: caller(subject), ...params })
  return Object.freeze({
    searchMemories: async (options) => send('searchMemories', options?.sessionId, optionsOf('searchMemories', options, '{query, types?, limit?}')),
    recallForSession: async (sessionId, context, limit) => send('recallForSession', sessionId, { context, limit }),
    storeMemory: async (memory) => send('storeMemory', memory?.sessionId, optionsOf('storeMemory', memory, '{type, content, sessionId?, tags?}')),
    getMemory: async (id) => send('getMemory', undefined, { id }),
    getStats: async () => send('getStats', undefined, {}),
    triggerMaintenance: async () => send('triggerMaintenance', undefined, {}),
    getSchedulerStatus: async () => send('getSchedulerStatus', undefined, {}),
    findSimilarMemories: async (threshold) => send('findSimilarMemories', undefined, { threshold }),
    getConsolidationLog: async (limit) => send('getConsolidationLog', undefined, { limit }),
    /** The same API, every call in `session`'s memory space (a DSH session object or its id). */
    forSession: (session) => makeMemoryService({ call, callerOf, bound: session }),
  })
}

/**
 * Provide the service under each name; undone when the plugin unloads (Cordis disposes what `ctx.provide`
 * registered with the plugin). A name another plugin already provides (dsh-memory-connect itself) is left to it.
 */
export function provideMemoryService(ctx, service, log) {
  const provided = []
  for (const name of SERVICE_NAMES) {
    try {
      ctx.provide(name, service)
      provided.push(name)
    } catch (error) {
      log.warn(`could not provide the ${name} service (${error?.message ?? error}); other plugins reach the memory under ${SERVICE_NAMES.filter((n) => n !== name).join(', ')}`)
    }
  }
  return provided
}
