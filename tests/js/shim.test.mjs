// The shim's DSH-facing pieces: model-request building and stream folding, tool definitions, recall, and the
// whole plugin (`apply`) against a stand-in Cordis context with the REAL sidecar behind it.
import assert from 'node:assert/strict'
import { copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { escapeForPrompt, LBRACE_VARIABLE, makeAssembleListener, withMemory } from '../../shim-js/activation.js'
import { buildGenerateOptions, ChunkFolder, makeHostLlm } from '../../shim-js/host-llm.js'
import * as plugin from '../../shim-js/index.js'
import { preparePython, pythonCandidates, readInstallStatus } from '../../shim-js/python-env.js'
import { FALLBACK_TOOLS, toolDefinition, ToolSet } from '../../shim-js/tools.js'
import { makeLog } from './fixtures.mjs'
import { cleanEnv, quietLog, REPO, sidecarPython, tempDir, waitFor } from './helpers.mjs'

const PYTHON = sidecarPython()

// Chunks exactly as DSH 0.1.0-rc.8 logged them for a streamed tool call (assistant/chunk events).
const TOOL_CALL_CHUNKS = [
  { type: 'block-start', index: 0, blockType: 'tool-call' },
  { type: 'tool-call-delta', index: 0, id: 'call_1', name: 'stratagate_summarize_block', argumentsDelta: '' },
  { type: 'tool-call-delta', index: 0, id: 'call_1', name: 'stratagate_summarize_block', argumentsDelta: '{"title": "T"' },
  { type: 'tool-call-delta', index: 0, id: 'call_1', argumentsDelta: ', "summary": "S"}' },
  { type: 'block-end', index: 0, block: { type: 'tool-call', id: 'call_1', name: 'stratagate_summarize_block', arguments: '{"title":"T","summary":"S"}' } },
  { type: 'usage', usage: { inputTokens: 10, outputTokens: 5 } },
  { type: 'finish', reason: { kind: 'tool-calls' }, replayState: { response: {} } },
]

describe('model requests for host.llm.complete', () => {
  const params = {
    messages: [
      { role: 'system', content: 'You compress blocks.' },
      { role: 'user', content: '{"transcript": "…"}' },
      { role: 'assistant', content: 'not json' },
      { role: 'user', content: 'Correction: call the tool.' },
    ],
    tool: { name: 'stratagate_summarize_block', description: 'Record it.', parameters: { type: 'object', properties: {} } },
    tool_instruction: 'You must answer by calling the function `stratagate_summarize_block` exactly once.',
    max_tokens: 4096,
    purpose: 'stratagate',
  }

  it('builds DSH messages by hand: system slot, user/assistant Message objects, the one tool, purpose', () => {
    const o = buildGenerateOptions(params, { provider: 'p', model: 'm' })
    // The sidecar words the instruction (host_route.py tool_instruction); the shim only appends it.
    assert.equal(o.system, 'You compress blocks.\n\nYou must answer by calling the function `stratagate_summarize_block` exactly once.')
    assert.equal(o.messages.length, 3)
    for (const m of o.messages) {
      assert.equal(typeof m.id, 'string')
      assert.equal(m.content[0].type, 'text')
    }
    assert.deepEqual(o.messages.map((m) => [m.role, m.source.kind]), [['user', 'plugin'], ['assistant', 'model'], ['user', 'plugin']])
    assert.deepEqual(o.messages[1].source, { kind: 'model', provider: 'p', model: 'm' })
    assert.deepEqual(o.tools, [params.tool])
    assert.equal(o.maxTokens, 4096)
    assert.equal(o.purpose, 'compaction')
  })

  it('folds stream chunks like BlockAssembler: block-end wins, finish maps to finish_reason', () => {
    const f = new ChunkFolder()
    for (const c of TOOL_CALL_CHUNKS) f.push(c)
    assert.deepEqual(f.completion('m'), {
      text: '',
      tool_calls: [{ name: 'stratagate_summarize_block', arguments: '{"title":"T","summary":"S"}' }],
      finish_reason: 'tool_calls',
      model: 'm',
    })
    const text = new ChunkFolder()
    for (const c of [
      { type: 'text-delta', index: 0, text: 'Hel' },
      { type: 'reasoning-delta', index: 1, text: 'hmm' },
      { type: 'text-delta', index: 0, text: 'lo' },
      { type: 'tool-call-delta', index: 2, id: 'c', name: 'x', argumentsDelta: '{"a"' },
      { type: 'finish', reason: { kind: 'max-tokens' } },
    ]) text.push(c)
    assert.deepEqual(text.completion('m'), { text: 'Hello', tool_calls: [], finish_reason: 'length', model: 'm' })
    const failed = new ChunkFolder()
    failed.push({ type: 'finish', reason: { kind: 'error', failure: { message: 'rate limited', code: 'RATE_LIMIT' } } })
    assert.throws(() => failed.completion('m'), /DSH model call failed: rate limited \(RATE_LIMIT\)/)
  })

  it('streams through the DSH llm service on the chosen route, reasoning off only when the model offers it', async () => {
    const calls = []
    const service = {
      async resolveModelInfo(provider, model) {
        return { provider, id: model, name: model, reasoning: { efforts: [{ id: 'off', name: 'Off' }, { id: 'high', name: 'High' }] } }
      },
      async *stream(options) {
        calls.push(options)
        yield* TOOL_CALL_CHUNKS
      },
    }
    const complete = makeHostLlm({ llm: () => service, route: () => ({ provider: 'deepseek', model: 'v4', sessionId: 's1' }) })
    const result = await complete(params)
    assert.equal(result.finish_reason, 'tool_calls')
    assert.equal(calls[0].provider, 'deepseek')
    assert.equal(calls[0].model, 'v4')
    assert.equal(calls[0].reasoningEffort, 'off')
    assert.equal(calls[0].sessionId, 's1')
    assert.ok(calls[0].signal instanceof AbortSignal)
    delete service.resolveModelInfo
    await complete(params)
    assert.equal(calls[1].reasoningEffort, undefined)
    await assert.rejects(makeHostLlm({ llm: () => service, route: () => null })(params), /no model configured in DSH/)
    await assert.rejects(makeHostLlm({ llm: () => undefined, route: () => ({ provider: 'a', model: 'b' }) })(params), /llm service is missing/)
  })
})

describe('tools', () => {
  it('defines raw-schema tools whose output renders as JSON text', async () => {
    const def = toolDefinition(FALLBACK_TOOLS[2], async (args) => ({ echoed: args }))
    assert.equal(def.name, 'memory_search_raw')
    assert.equal(def.parameters, FALLBACK_TOOLS[2].parameters)
    assert.deepEqual(def.output.schema, { type: 'object', additionalProperties: true })
    assert.deepEqual(def.output.render({}, { a: 1 }), [{ type: 'text', text: '{\n  "a": 1\n}' }])
    assert.deepEqual(await def.execute({ query: 'q' }, { signal: new AbortController().signal }), { echoed: { query: 'q' } })
  })

  it('rejects on abort even if the sidecar never answers', async () => {
    const def = toolDefinition(FALLBACK_TOOLS[0], () => new Promise(() => {}))
    const controller = new AbortController()
    const running = def.execute({}, { signal: controller.signal })
    controller.abort(new Error('user cancelled'))
    await assert.rejects(running, /user cancelled/)
  })

  it('re-registers only when the sidecar list differs', () => {
    const registered = []
    const disposed = []
    const set = new ToolSet((d) => (registered.push(d.name), () => disposed.push(d.name)), async () => ({}))
    assert.equal(set.apply(FALLBACK_TOOLS), true)
    assert.equal(set.apply(structuredClone(FALLBACK_TOOLS)), false)
    const changed = structuredClone(FALLBACK_TOOLS)
    changed[0].description = 'new text'
    assert.equal(set.apply(changed), true)
    assert.equal(registered.length, 2 * FALLBACK_TOOLS.length)
    assert.equal(disposed.length, FALLBACK_TOOLS.length)
  })
})

describe('recall', () => {
  it('escapes {{ for DSH strict prompt interpolation, byte-identical once rendered', () => {
    const text = 'run ${{ secrets.TOKEN }} and {{{x}}} and {{'
    const escaped = escapeForPrompt(text)
    assert.doesNotMatch(escaped.replaceAll(`{{${LBRACE_VARIABLE}}}`, ''), /\{\{/)
    // DSH's interpolation: {{name}} → variables[name], nothing else touched.
    const rendered = escaped.replace(/\{\{([a-z][a-z0-9_]*)\}\}/g, (_, n) => ({ [LBRACE_VARIABLE]: '{{' })[n])
    assert.equal(rendered, text)
    const out = withMemory({ contexts: [{ name: 'a', text: 'x' }], variables: { v: '1' } }, text)
    assert.equal(out.contexts[1].name, 'stratagate:memory')
    assert.deepEqual(out.variables, { v: '1', [LBRACE_VARIABLE]: '{{' })
    assert.equal(withMemory({ contexts: [] }, 'plain').variables, undefined)
  })

  it('adds memory after next(), forwards the session origin, and falls back to nothing on timeout', async () => {
    const assembled = { sections: [], contexts: [{ name: 'sandbox', text: 's' }], tools: [], variables: {} }
    const seen = []
    const listener = makeAssembleListener({
      namespaceOf: async () => 'ns',
      render: async (params) => (seen.push(params), { text: 'MEMORY' }),
      available: () => true,
      timeoutMs: () => 200,
    })
    const session = { id: 's1', header: {}, events: makeLog() }
    const out = await listener({}, { agent: { session } }, async () => assembled)
    assert.deepEqual(out.contexts.map((c) => c.name), ['sandbox', 'stratagate:memory'])
    // The raw step material (the sidecar picks the query): the current turn's events and the user messages before it.
    assert.deepEqual(Object.keys(seen[0]), ['namespace', 'session', 'events', 'earlier', 'claimed', 'origin', 'lang'])
    assert.equal(seen[0].lang, 'en', 'the UI language the recalled items are explained in (default en)')
    assert.equal(seen[0].origin, null)
    assert.equal(seen[0].events[0].type, 'turn/start')
    assert.equal(seen[0].events[0].data.turn, 2)
    // Whether a subagent gets recall is the sidecar's call (it renders nothing for origin 'subagent').
    await listener({}, { agent: { session: { id: 'x', header: { origin: 'subagent' } } } }, async () => assembled)
    assert.equal(seen.at(-1).origin, 'subagent')
    assert.equal(await listener({}, {}, async () => assembled), assembled, 'no agent: untouched')
    const slow = makeAssembleListener({ namespaceOf: async () => 'ns', render: () => new Promise(() => {}), available: () => true, timeoutMs: () => 50 })
    const t0 = Date.now()
    assert.equal(await slow({}, { agent: { session } }, async () => assembled), assembled)
    assert.ok(Date.now() - t0 < 1000)
  })
})

describe('python environment', () => {
  it('tries the configured python, else STRATAGATE_PYTHON, else python3/python on PATH', () => {
    assert.deepEqual(pythonCandidates('/opt/py', { STRATAGATE_PYTHON: '/x' }).map((c) => c.command), ['/opt/py'])
    assert.deepEqual(pythonCandidates('auto', { STRATAGATE_PYTHON: '/x' }).map((c) => c.command), ['/x'])
    if (process.platform !== 'win32') assert.deepEqual(pythonCandidates('auto', {}).map((c) => c.command), ['python3', 'python'])
  })

  it('uses an interpreter that already has this stratagate version, without a venv', async () => {
    const home = tempDir()
    const r = await preparePython({ configPython: PYTHON, packageRoot: REPO, home, env: cleanEnv(), log: quietLog })
    assert.equal(r.ok, true)
    assert.equal(r.venv, null)
    assert.equal(r.python, PYTHON)
    assert.equal(existsSync(join(home, 'venv-0.1.0')), false)
  })

  it('runs plugin/bootstrap_venv.py with the Python it found and takes the venv the status file reports', async () => {
    // python3 on PATH (not an explicit choice, so no fast path); the venv is already installed: the script only checks.
    const home = tempDir()
    const bin = tempDir()
    symlinkSync(PYTHON, join(bin, 'python3'))
    const venv = join(home, 'venv-0.1.0')
    mkdirSync(join(venv, 'bin'), { recursive: true })
    symlinkSync(PYTHON, join(venv, 'bin', 'python'))
    writeFileSync(join(venv, '.stratagate-installed'), JSON.stringify({ version: '0.1.0' }))
    const env = cleanEnv({ PATH: `${bin}:/usr/bin:/bin`, PYTHONPATH: join(REPO, 'sidecar') })
    const terminal = []
    const r = await preparePython({ configPython: 'auto', packageRoot: REPO, home, env, log: quietLog, terminal: (l) => terminal.push(l) })
    assert.equal(r.ok, true, r.error)
    assert.equal(r.python, join(venv, 'bin', 'python'))
    assert.equal(r.venv, venv)
    assert.equal(readInstallStatus(venv).state, 'ready')
    assert.deepEqual(terminal, []) // nothing installed: the terminal hears nothing
  })

  it('reports a failed install with the installer\'s error and hint, and the state it went through', async () => {
    // A package root without pyproject.toml: the venv is created, pip refuses the source.
    const root = tempDir()
    mkdirSync(join(root, 'plugin'))
    copyFileSync(join(REPO, 'plugin', 'bootstrap_venv.py'), join(root, 'plugin', 'bootstrap_venv.py'))
    const bin = tempDir()
    symlinkSync(PYTHON, join(bin, 'python3'))
    const home = tempDir()
    const states = []
    const env = cleanEnv({ PATH: `${bin}:/usr/bin:/bin` })
    const terminal = []
    const r = await preparePython({ configPython: 'auto', packageRoot: root, home, env, log: quietLog, onState: (s) => states.push(s), terminal: (l) => terminal.push(l) })
    assert.equal(r.ok, false)
    // The terminal DSH runs in hears of the install and of its end.
    assert.match(terminal[0], /^StrataGate: installing the Python sidecar into .*venv-.* \(first start only/)
    assert.match(terminal.at(-1), /^StrataGate: the sidecar install failed after \d+ s: pip install failed/)
    assert.match(r.error, /could not set up the sidecar venv .*pip install failed/)
    assert.match(r.hint, /package index/)
    assert.ok(states.includes('installing'), states.join(','))
    assert.match(readFileSync(join(home, 'install.log'), 'utf8'), /FAILED: pip install failed/)
  })

  it('explains what to do when no usable Python exists', async () => {
    const r = await preparePython({ configPython: '/nonexistent/python3', packageRoot: REPO, home: tempDir(), env: cleanEnv(), log: quietLog })
    assert.equal(r.ok, false)
    assert.match(r.error, /no Python ≥ 3\.11 found \(tried \/nonexistent\/python3/)
    assert.match(r.hint, /STRATAGATE_PYTHON/)
  })
})

/** A stand-in for the Cordis context a DSH plugin gets: just the surface the shim uses. */
function fakeContext(services = {}) {
  const listeners = new Map()
  const disposers = []
  const ctx = {
    tools: { registered: new Map(), register(def) {
      if (this.registered.has(def.name)) throw new Error(`duplicate tool ${def.name}`)
      this.registered.set(def.name, def)
      return () => this.registered.delete(def.name)
    } },
    systemPrompt: { sections: [], section(s) { this.sections.push(s) } },
    logger: quietLog,
    on(name, fn) {
      listeners.set(name, [...(listeners.get(name) ?? []), fn])
    },
    emit(name, ...args) {
      for (const fn of listeners.get(name) ?? []) fn(...args)
    },
    waterfall(name, ...args) {
      return listeners.get(name)[0](...args)
    },
    get: (name) => services[name],
    provided: {},
    provide(name, value) {
      if (name in ctx.provided) throw new Error(`service "${name}" has been registered`)
      ctx.provided[name] = value
      disposers.push(() => delete ctx.provided[name])
    },
    plugin(child) {
      ctx.children = [...(ctx.children ?? []), child]
    },
    effect(fn) {
      disposers.push(fn())
    },
    dispose: async () => {
      for (const d of disposers) await d()
    },
  }
  return ctx
}

describe('the plugin in a stand-in DSH context (real sidecar)', () => {
  let ctx
  let home
  const streamCalls = []
  const session = { id: 'session-a', header: { id: 'session-a', cwd: '/work/proj-a' }, events: [], requestHeader: () => ({ config: { provider: 'fake', model: 'fake-model' } }) }
  const saved = {}

  before(async () => {
    home = tempDir()
    for (const k of ['DSH_HOME', 'STRATAGATE_BLOCK_TURNS', 'STRATAGATE_JOB_BACKOFF_BASE', 'STRATAGATE_DB', 'STRATAGATE_PYTHON']) saved[k] = process.env[k]
    Object.assign(process.env, { DSH_HOME: home, STRATAGATE_BLOCK_TURNS: '1', STRATAGATE_JOB_BACKOFF_BASE: '0' })
    delete process.env.STRATAGATE_DB
    const llm = {
      async *stream(options) {
        streamCalls.push(options)
        yield { type: 'tool-call-delta', index: 0, id: 'c1', name: 'stratagate_summarize_block', argumentsDelta: JSON.stringify({ title: 'Ports', tags: [], summary: 'Port 8080.', key_facts: ['port 8080'], has_durable_facts: false }) }
        yield { type: 'finish', reason: { kind: 'tool-calls' } }
      },
    }
    const sessions = { get: (id) => (id === session.id ? session : undefined) }
    ctx = fakeContext({ llm, sessions, agentDefaultModel: { currentSelection: () => ({ provider: 'default', model: 'd' }) } })
    // The recall/nudge deadline (1.5 s by default) is product behaviour, tested with stubs in the listener tests;
    // here a loaded machine must not turn a slow answer into "no memory this step".
    plugin.apply(ctx, { python: PYTHON, database: join(home, 'db', 'memory.db'), activationTimeoutMs: 60_000 })
  })

  after(async () => {
    await ctx.dispose()
    assert.deepEqual(Object.keys(ctx.provided), [], 'unloading the plugin withdraws the service')
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  })

  it('registers every memory tool and the usage section synchronously', () => {
    assert.deepEqual([...ctx.tools.registered.keys()].sort(), FALLBACK_TOOLS.map((t) => t.name).sort())
    assert.ok(ctx.tools.registered.has('memory_search_raw') && ctx.tools.registered.has('memory_remember'))
    assert.equal(ctx.systemPrompt.sections[0].name, 'stratagate')
    assert.equal(ctx.systemPrompt.sections[0].order, 113)
    assert.equal(ctx.children[0].inject[0], 'webServer')
  })

  it('captures a turn from session events into the configured database, and the summary runs via ctx.llm', async () => {
    const log = makeLog()
    for (const event of log) {
      session.events = log.slice(0, event.seq + 1)
      ctx.emit('session/event', session, event)
    }
    const tool = ctx.tools.registered.get('memory_search_raw')
    // session/event listeners capture in the background: wait until the turn is stored (not a fixed sleep).
    const result = await waitFor(async () => {
      try {
        return await tool.execute({ query: 'pnpm' }, { agent: { session }, callId: 'call_9', signal: new AbortController().signal })
      } catch (err) {
        if (/no turn has been captured/.test(String(err?.message ?? err))) return null
        throw err
      }
    }, { timeoutMs: 120_000, what: 'the captured turn' })
    assert.ok(result.hits.some((h) => /pnpm/.test(h.text)))
    await waitFor(() => streamCalls.length > 0, { what: 'a host model call' })
    assert.equal(streamCalls[0].provider, 'fake', 'the route of the session that captured the turn')
    assert.equal(streamCalls[0].purpose, 'compaction')
    assert.ok(existsSync(join(home, 'db', 'memory.db')))
  })

  it('recalls memory of other sessions of the same project, not of other projects', async () => {
    const other = { id: 'session-b', header: { id: 'session-b', cwd: '/work/proj-a' }, events: makeLog() }
    const elsewhere = { id: 'session-c', header: { id: 'session-c', cwd: '/work/proj-b' }, events: makeLog() }
    const assembled = { sections: [], contexts: [], tools: [], variables: {} }
    // Wait until both blocks of session-a are summarised (memory legitimately changes until then).
    const out = await waitFor(async () => {
      const r = await ctx.waterfall('system-prompt/assemble', {}, { agent: { session: other } }, async () => assembled)
      return r.contexts.length && !/· pending ·/.test(r.contexts[0].text) ? r : null
    }, { timeoutMs: 120_000, what: 'memory context with both blocks ready' })
    assert.equal(out.contexts[0].name, 'stratagate:memory')
    assert.match(out.contexts[0].text, /stratagate-memory/)
    const again = await ctx.waterfall('system-prompt/assemble', {}, { agent: { session: other } }, async () => assembled)
    assert.equal(again.contexts[0].text, out.contexts[0].text, 'byte-stable while nothing changed')
    const foreign = await ctx.waterfall('system-prompt/assemble', {}, { agent: { session: elsewhere } }, async () => assembled)
    assert.equal(foreign.contexts.length, 0, 'another project sees nothing')
    // The chat's StrataGate Memory row: what the step recalled joins the step's input (agent/pre-step), named by id.
    const input = { id: 'p1', role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } }
    const decision = await ctx.waterfall('agent/pre-step', { agent: { session: other }, turn: 2, step: 1 }, async () => ({ kind: 'enter', messages: [input] }))
    assert.equal(decision.messages[0], input)
    const row = decision.messages[1]
    assert.deepEqual([row.source.kind, row.source.plugin, row.source.form], ['plugin', 'StrataGate Memory', 'catalog'])
    assert.ok(row.source.entries.length > 0 && row.source.entries.every((e) => /^(evt|nod|blk)_\d+$/.test(e.name)), JSON.stringify(row.source.entries))
    assert.ok(row.source.entries.every((e) => row.content[0].text.includes(e.name)), 'the model-facing line names the same ids')
  })

  it('provides the memory service to other plugins, in the calling session\'s memory space', async () => {
    const memory = ctx.provided.crossSessionMemory
    assert.equal(ctx.provided.stratagateMemory, memory, 'one object under both names')
    const stored = await memory.storeMemory({ type: 'decision', content: 'Releases are tagged from the main branch only.', sessionId: 'session-a', tags: ['release'] })
    assert.match(stored.id, /^evt_\d+$/)
    assert.equal(stored.sessionId, 'session-a')
    assert.equal(stored.status, 'active')
    const hits = await memory.searchMemories({ query: 'release tags main branch', sessionId: 'session-a' })
    assert.deepEqual(hits.map((m) => m.id), [stored.id])
    // Another session of the same folder: the same memory, through the service and the agent's own tool.
    const sibling = { id: 'session-s', header: { id: 'session-s', cwd: '/work/proj-a' }, events: [] }
    const stats = await memory.forSession(sibling).getStats()
    assert.ok(stats.totalMemories >= 1 && stats.byType.decision >= 1, JSON.stringify(stats))
    const tool = ctx.tools.registered.get('memory_search_events')
    const found = await tool.execute({ query: 'release tags main branch' }, { agent: { session: sibling }, callId: 'call_s', signal: new AbortController().signal })
    assert.deepEqual(found.hits.map((h) => h.id), [stored.id])
    // No session: DSH's own working directory (here the test's), another memory space.
    assert.deepEqual(await memory.searchMemories({ query: 'release tags main branch' }), [])
    assert.deepEqual((await memory.recallForSession('session-x', 'release tags', 5)).map((m) => m.id), [])
    assert.deepEqual((await memory.forSession(sibling).recallForSession(undefined, 'release tags')).map((m) => m.id), [stored.id])
    assert.equal((await memory.forSession(sibling).getMemory(stored.id)).content, 'Releases are tagged from the main branch only.')
    await assert.rejects(memory.storeMemory({ type: 'memo', content: 'x' }), /type: Input should be 'decision'/)
    await assert.rejects(memory.searchMemories('release'), /searchMemories takes one options object/)
  })

  it('serves the status route', async () => {
    const routes = []
    const web = { webServer: { register: (r) => (routes.push(r), () => {}) }, effect: (fn) => fn() }
    ctx.children[0].apply(web)
    const res = { headers: {}, setHeader(k, v) { this.headers[k] = v }, end(body) { this.body = body } }
    // The route checks the request as DSH's /api does: a loopback Host (a real request always carries one).
    await routes[0].handler({ method: 'GET', url: '/api/stratagate/status', headers: { host: '127.0.0.1:4100' } }, res)
    const status = JSON.parse(res.body)
    assert.equal(routes[0].path, '/api/stratagate/status')
    assert.equal(status.install, null) // no install ran: the interpreter already had the sidecar
    assert.equal(status.state, 'ready')
    assert.equal(status.version.shim, JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).version)
    assert.equal(status.version.sidecar, '0.1.0')
    assert.equal(status.db_path, join(home, 'db', 'memory.db'))
    assert.equal(status.python.command, PYTHON)
    assert.equal(status.venv, null)
    assert.equal(status.queue.spooled_turns, 0)
    assert.equal(typeof status.queue.depth, 'number')
    assert.equal(status.restarts, 0)
    assert.ok(status.counts.turns >= 2)
    // The Memory page's prefix route reaches the real sidecar's page.request (its assets are served by it).
    const memory = routes.find((r) => r.path === '/api/stratagate/memory')
    assert.equal(memory.kind, 'prefix')
    const page = { headers: {}, setHeader(k, v) { this.headers[k] = v }, end(body) { this.body = body } }
    await memory.handler({ method: 'GET', url: '/api/stratagate/memory/no-such-route?x=1', headers: { host: '127.0.0.1:4100' } }, page)
    assert.equal(page.statusCode, 404)
    assert.match(JSON.parse(page.body).error, /no route GET \/no-such-route/)
  })
})

describe('the plugin without Python', () => {
  it('still starts, registers the tools, and every tool call explains what is wrong', async () => {
    const home = tempDir()
    const saved = process.env.DSH_HOME
    process.env.DSH_HOME = home
    const ctx = fakeContext()
    try {
      plugin.apply(ctx, { python: '/nonexistent/python3' })
      assert.equal(ctx.tools.registered.size, FALLBACK_TOOLS.length)
      const tool = ctx.tools.registered.get('memory_get_blocks')
      const session = { id: 's', header: { cwd: '/p' } }
      await assert.rejects(
        waitFor(async () => {
          try {
            await tool.execute({}, { agent: { session }, callId: 'c', signal: new AbortController().signal })
          } catch (error) {
            if (/still starting/.test(error.message)) return false
            throw error
          }
          return true
        }),
        /StrataGate memory is unavailable: no Python ≥ 3\.11 found.*set the `python` option/s,
      )
      const assembled = { contexts: [] }
      assert.equal(await ctx.waterfall('system-prompt/assemble', {}, { agent: { session } }, async () => assembled), assembled)
    } finally {
      await ctx.dispose()
      if (saved === undefined) delete process.env.DSH_HOME
      else process.env.DSH_HOME = saved
    }
  })
})
