// HTTP routes of the web profile, registered from a child plugin that injects `webServer` (so they exist only
// there). JSON in, JSON out; the sidecar answers everything, the shim only finds the session and its namespace.
//   GET  /api/stratagate/status                         the plugin's status (system.status)
//   GET  /api/stratagate/context/status?session=<id>    context use of one live session (context.status) — the dock
//   GET  /api/stratagate/context/settings               the effective context settings (context.settings.get)
//   POST /api/stratagate/context/settings {settings}    change them (context.settings.set); applies at the next plan

export const STATUS_PATH = '/api/stratagate/status'
export const CONTEXT_STATUS_PATH = '/api/stratagate/context/status'
export const CONTEXT_SETTINGS_PATH = '/api/stratagate/context/settings'
const MAX_BODY = 64 * 1024

function send(req, res, code, value, headers = {}) {
  res.statusCode = code
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v)
  res.setHeader('Content-Type', 'application/json; charset=utf-8')
  res.setHeader('Cache-Control', 'no-store')
  res.end(req.method === 'HEAD' ? undefined : JSON.stringify(value, null, 2))
}

/** Read a JSON request body (≤ 64 KiB). */
export async function readJson(req) {
  if (req.body !== undefined) return typeof req.body === 'string' ? JSON.parse(req.body) : req.body
  const chunks = []
  let size = 0
  for await (const chunk of req) {
    size += chunk.length
    if (size > MAX_BODY) throw Object.assign(new Error(`request body larger than ${MAX_BODY} bytes`), { status: 413 })
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk)
  }
  const text = Buffer.concat(chunks).toString('utf8').trim()
  return text ? JSON.parse(text) : {}
}

function route(web, path, methods, handle, log) {
  web.effect(
    () =>
      web.webServer.register({
        kind: 'exact',
        path,
        handler: async (req, res) => {
          const method = req.method ?? 'GET'
          if (!methods.includes(method)) return send(req, res, 405, { error: `use ${methods.join(' or ')}` }, { Allow: methods.join(', ') })
          try {
            const [code, value] = await handle(req, method)
            send(req, res, code, value)
          } catch (error) {
            const code = error?.status ?? (error instanceof SyntaxError ? 400 : 500)
            if (code >= 500) log.warn?.(`${path}: ${error?.message ?? error}`)
            send(req, res, code, { error: String(error?.message ?? error) })
          }
        },
      }),
    `stratagate route ${path}`,
  )
}

/** The plugin status route (unchanged shape: the sidecar's system.status, or the shim's half). */
export function registerStatusRoute(web, status, log = {}) {
  route(
    web,
    STATUS_PATH,
    ['GET', 'HEAD'],
    async () => {
      try {
        return [200, await status()]
      } catch (error) {
        log.warn?.(`status route: ${error?.message ?? error}`)
        return [500, { state: 'unknown', last_error: String(error?.message ?? error) }]
      }
    },
    log,
  )
}

/**
 * The context routes.
 * @param {object} web - the child plugin context (webServer injected)
 * @param {object} o
 * @param {(id: string) => object|undefined} o.sessionOf - a live DSH session by id
 * @param {(session: object) => Promise<string>} o.namespaceOf
 * @param {(method: string, params: object, options: object) => Promise<any>} o.call
 * @param {() => string} o.lang
 */
export function registerContextRoutes(web, { sessionOf, namespaceOf, call, lang }, log = {}) {
  route(
    web,
    CONTEXT_STATUS_PATH,
    ['GET', 'HEAD'],
    async (req) => {
      const query = new URL(req.url ?? '/', 'http://localhost').searchParams
      const id = query.get('session')
      if (!id) return [400, { error: 'the query parameter session=<session id> is required' }]
      const session = sessionOf(id)
      if (!session) return [404, { error: `session ${id} is not loaded in this DSH process` }]
      const requested = query.get('lang')
      const params = { namespace: await namespaceOf(session), session: id, detail: query.get('detail') === '1' || query.get('detail') === 'true', lang: requested === 'zh' || requested === 'en' ? requested : lang() }
      return [200, await call('context.status', params, { timeoutMs: 5000 })]
    },
    log,
  )
  route(
    web,
    CONTEXT_SETTINGS_PATH,
    ['GET', 'HEAD', 'POST'],
    async (req, method) => {
      if (method !== 'POST') return [200, await call('context.settings.get', {}, { timeoutMs: 5000 })]
      const body = await readJson(req)
      const settings = body && typeof body === 'object' && !Array.isArray(body) && body.settings && typeof body.settings === 'object' ? body.settings : null
      if (!settings) return [400, { error: 'send {"settings": {...}}' }]
      try {
        return [200, await call('context.settings.set', { settings }, { timeoutMs: 5000 })]
      } catch (error) {
        // The sidecar's JSON-RPC "invalid params" is the user's mistake, not a server failure.
        if (error?.code === -32602) return [400, { error: String(error.message ?? error), data: error.data ?? null }]
        throw error
      }
    },
    log,
  )
}
