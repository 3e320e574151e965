// Test-only DSH plugin: proves the e2e harness works independently of StrataGate.
// It registers one model-callable tool, one runtime-context entry and (web profile only) one HTTP route.
export const name = 'stratagate-e2e-probe'
export const inject = ['tools', 'systemPrompt']

export const PROBE_CONTEXT = 'E2E-PROBE-CONTEXT'

export function apply(ctx) {
  ctx.tools.register({
    name: 'e2e_probe',
    description: 'Test probe: echoes its text with the host pid.',
    parameters: {
      type: 'object',
      properties: { text: { type: 'string', description: 'Text to echo back' } },
      required: ['text'],
      additionalProperties: false,
    },
    output: {
      schema: { type: 'object', additionalProperties: true },
      render: (_args, value) => [{ type: 'text', text: JSON.stringify(value) }],
    },
    async execute(args) {
      if (args.text === '__fail__') throw new Error('probe refused __fail__')
      return { probe: 'ok', echoed: args.text, host_pid: process.pid }
    },
  })

  ctx.systemPrompt.context({ name: 'e2e:probe', order: 950, text: () => PROBE_CONTEXT })

  // Loads only where the webServer service exists (the web profile).
  ctx.plugin({
    name: 'stratagate-e2e-probe-web',
    inject: ['webServer'],
    apply(web) {
      web.effect(() => web.webServer.register({
        kind: 'exact',
        path: '/api/e2e-probe/status',
        handler: (_req, res) => {
          res.statusCode = 200
          res.setHeader('Content-Type', 'application/json')
          res.end(JSON.stringify({ ok: true, probe: true, pid: process.pid }))
        },
      }), 'e2e-probe-route')
    },
  })
}
