// GET /api/stratagate/status — JSON status of the memory plugin, for the settings page and for people.
// Registered from a child plugin that injects `webServer`, so it exists only in the web profile.

export const STATUS_PATH = '/api/stratagate/status'

export function registerStatusRoute(web, status, log = {}) {
  web.effect(
    () =>
      web.webServer.register({
        kind: 'exact',
        path: STATUS_PATH,
        handler: async (req, res) => {
          if (req.method && req.method !== 'GET' && req.method !== 'HEAD') {
            res.statusCode = 405
            res.setHeader('Allow', 'GET, HEAD')
            res.end()
            return
          }
          let body
          try {
            body = JSON.stringify(await status(), null, 2)
            res.statusCode = 200
          } catch (error) {
            log.warn?.(`status route: ${error?.message ?? error}`)
            body = JSON.stringify({ state: 'unknown', last_error: String(error?.message ?? error) })
            res.statusCode = 500
          }
          res.setHeader('Content-Type', 'application/json; charset=utf-8')
          res.setHeader('Cache-Control', 'no-store')
          res.end(req.method === 'HEAD' ? undefined : body)
        },
      }),
    'stratagate status route',
  )
}
