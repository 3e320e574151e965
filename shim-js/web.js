// HTTP routes of the web profile, registered from a child plugin that injects `webServer` (so they exist only
// there). JSON in, JSON out; the sidecar answers everything, the shim only finds the session and its namespace.
//   GET  /api/stratagate/status                         the plugin's status (system.status + the install's progress)
//   POST /api/stratagate/install/retry                  try the failed install (or the failed sidecar) again
//   GET  /api/stratagate/context/status?session=<id>    context use of one live session (context.status) — the dock
//   GET  /api/stratagate/context/settings               the effective context settings (context.settings.get)
//   POST /api/stratagate/context/settings {settings}    change them (context.settings.set); applies at the next plan
//   GET|HEAD|POST /api/stratagate/memory/*              the Memory page: forwarded unchanged to page.request
//
// Every route checks the request the way DSH's own /api route does (isTrustedRequest): DSH runs that fence only
// inside its `/api` prefix handler, and the web server matches exact routes and longer prefixes (ours) first, so
// without our own check these routes would answer a rebound or cross-site browser request.

export const STATUS_PATH = '/api/stratagate/status'
export const INSTALL_RETRY_PATH = '/api/stratagate/install/retry'
export const CONTEXT_STATUS_PATH = '/api/stratagate/context/status'
export const CONTEXT_SETTINGS_PATH = '/api/stratagate/context/settings'
export const MEMORY_PREFIX = '/api/stratagate/memory'
const MAX_BODY = 64 * 1024
/** The Memory page's request bodies (an import file) may be larger; the standalone server has the same bound. */
export const MAX_PAGE_BODY = 1024 * 1024
/** page.request's deadline: the page's long poll (GET /changes) waits up to 25 s in the sidecar. */
export const PAGE_TIMEOUT_MS = 35_000

const header = (req, name) => {
  const value = req.headers?.[name]
  return typeof value === 'string' ? value : undefined
}

/** localhost, [::1] or any 127/8 address (DSH's isLoopbackHostname). */
export function isLoopbackHostname(hostname) {
  if (hostname === 'localhost' || hostname === '[::1]') return true
  const parts = hostname.split('.')
  return parts.length === 4 && parts[0] === '127' && parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)
}

/**
 * DSH's browser-trust fence (dsh-client-connection isTrustedApiRequest, loopback only): the Host must be a loopback
 * authority (DNS rebinding cannot forge it), no cross-site fetch metadata, and an Origin, when sent, must be the
 * same authority.
 */
export function isTrustedRequest(req) {
  const host = header(req, 'host')
  if (host === undefined) return false
  let hostUrl
  try {
    hostUrl = new URL(`http://${host}`)
  } catch {
    return false
  }
  if (hostUrl.host !== host.toLowerCase().replace(/:80$/, '') || !isLoopbackHostname(hostUrl.hostname)) return false
  if (header(req, 'sec-fetch-site') === 'cross-site') return false
  const origin = header(req, 'origin')
  if (origin === undefined) return true
  try {
    return new URL(origin).host === hostUrl.host
  } catch {
    return false
  }
}

const FORBIDDEN = { error: 'forbidden: StrataGate answers same-origin requests to a loopback address only' }

function sendRaw(req, res, code, contentType, text, headers = {}) {
  res.statusCode = code
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v)
  res.setHeader('Content-Type', contentType)
  res.setHeader('Cache-Control', 'no-store')
  res.setHeader('X-Content-Type-Options', 'nosniff')
  res.end(req.method === 'HEAD' ? undefined : text)
}

function send(req, res, code, value, headers = {}) {
  sendRaw(req, res, code, 'application/json; charset=utf-8', JSON.stringify(value, null, 2), headers)
}

/** A request body as text (≤ `limit` bytes, else an error with status 413). */
async function readText(req, limit) {
  if (req.body !== undefined) return typeof req.body === 'string' ? req.body : JSON.stringify(req.body)
  const declared = Number(header(req, 'content-length'))
  const tooLarge = () => Object.assign(new Error(`request body larger than ${limit} bytes`), { status: 413 })
  if (declared > limit) throw tooLarge()
  const chunks = []
  let size = 0
  for await (const chunk of req) {
    size += chunk.length
    if (size > limit) throw tooLarge()
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk)
  }
  return Buffer.concat(chunks).toString('utf8').trim()
}

/** Read a JSON request body (≤ 64 KiB). */
export async function readJson(req) {
  if (req.body !== undefined && typeof req.body !== 'string') return req.body
  const text = await readText(req, MAX_BODY)
  return text ? JSON.parse(text) : {}
}

function route(web, path, methods, handle, log) {
  web.effect(
    () =>
      web.webServer.register({
        kind: 'exact',
        path,
        handler: async (req, res) => {
          if (!isTrustedRequest(req)) return send(req, res, 403, FORBIDDEN)
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

/**
 * Retry a failed install or a sidecar that kept crashing (`retry()` = Runtime.retry): 202 when something restarts,
 * 409 with the reason when there is nothing to retry.
 */
export function registerInstallRetryRoute(web, retry, log = {}) {
  route(
    web,
    INSTALL_RETRY_PATH,
    ['POST'],
    async () => {
      const outcome = retry()
      return [outcome.retried ? 202 : 409, outcome]
    },
    log,
  )
}

/**
 * The Memory page: every request under /api/stratagate/memory goes to the sidecar's `page.request` as
 * `{method, path, query, body}` and its `{status, content_type, body}` is the reply (no logic here: routes,
 * validation and redaction are the sidecar's, shared with `stratagate ui`). Only HTTP framing is checked: the
 * fence, the verb, a JSON body of at most 1 MiB.
 * @param {object} web - the child plugin context (webServer injected)
 * @param {(method: string, params: object, options: object) => Promise<any>} call
 */
export function registerMemoryRoute(web, call, log = {}) {
  const handler = async (req, res) => {
    if (!isTrustedRequest(req)) return send(req, res, 403, FORBIDDEN)
    const method = req.method ?? 'GET'
    if (!['GET', 'HEAD', 'POST'].includes(method)) return send(req, res, 405, { error: `${method} is not served; use GET, HEAD or POST` }, { Allow: 'GET, HEAD, POST' })
    const url = new URL(req.url ?? '/', 'http://localhost')
    let body = null
    if (method === 'POST') {
      let text
      try {
        text = await readText(req, MAX_PAGE_BODY)
      } catch (error) {
        return send(req, res, error?.status ?? 400, { error: String(error?.message ?? error) })
      }
      if (text) {
        const kind = (header(req, 'content-type') ?? '').split(';')[0].trim().toLowerCase()
        if (kind !== 'application/json') return send(req, res, 415, { error: 'a POST body must be JSON (Content-Type: application/json)' })
        try {
          body = JSON.parse(text)
        } catch (error) {
          return send(req, res, 400, { error: `the request body is not valid JSON: ${error.message}` })
        }
      }
    }
    let reply
    try {
      reply = await call('page.request', { method, path: url.pathname, query: Object.fromEntries(url.searchParams), body }, { timeoutMs: PAGE_TIMEOUT_MS })
    } catch (error) {
      // -32602: page.request itself refused the request (a path over its length bound): the caller's mistake.
      if (error?.code === -32602) return send(req, res, 400, { error: String(error.message ?? error), details: error.data ?? null })
      log.warn?.(`${MEMORY_PREFIX}: ${error?.message ?? error}`)
      return send(req, res, 503, { error: String(error?.message ?? error) }, { 'Retry-After': '5' })
    }
    const status = Number.isInteger(reply?.status) && reply.status >= 200 && reply.status <= 599 ? reply.status : 502
    const contentType = typeof reply?.content_type === 'string' ? reply.content_type : 'application/json; charset=utf-8'
    const text = typeof reply?.body === 'string' && !contentType.startsWith('application/json') ? reply.body : JSON.stringify(reply?.body ?? null)
    const headers = status === 405 && Array.isArray(reply?.body?.allow) ? { Allow: reply.body.allow.join(', ') } : {}
    sendRaw(req, res, status, contentType, text, headers)
  }
  web.effect(
    () =>
      web.webServer.register({
        kind: 'prefix',
        path: MEMORY_PREFIX,
        handler: (req, res) =>
          handler(req, res).catch((error) => {
            log.warn?.(`${MEMORY_PREFIX}: ${error?.message ?? error}`)
            if (!res.headersSent) send(req, res, 500, { error: String(error?.message ?? error) })
          }),
      }),
    `stratagate route ${MEMORY_PREFIX}`,
  )
}
