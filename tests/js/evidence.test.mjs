// The evidence gate from the shim's side: retrieval batches on tool results, `evidence.open_batches`, and the
// once-per-turn `agent/turn-stopping` nudge — against the REAL sidecar.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import * as plugin from '../../shim-js/index.js'
import { makeTurnStoppingListener, nudgeMessage } from '../../shim-js/nudge.js'
import { SidecarProcess } from '../../shim-js/sidecar-process.js'
import { makeLog } from './fixtures.mjs'
import { cleanEnv, quietLog, sidecarPython, tempDir, waitFor } from './helpers.mjs'

const PYTHON = sidecarPython()

/** An agent stand-in: the session and a recording `steer`. */
function fakeAgent(session) {
  return { session, steered: [], steer(message) { this.steered.push(message) } }
}

describe('evidence.open_batches (real sidecar)', () => {
  let sidecar
  const ns = 'proj-evidence'
  const call = (name, args, session = 's1') => sidecar.call('tools.call', { namespace: ns, session, name, arguments: args })

  before(async () => {
    const dir = tempDir()
    sidecar = new SidecarProcess({
      command: PYTHON,
      args: ['-m', 'stratagate', 'serve'],
      env: cleanEnv({ DSH_HOME: dir, STRATAGATE_DB: join(dir, 'memory.db'), STRATAGATE_JOB_BACKOFF_BASE: '0' }),
      log: quietLog,
    })
    sidecar.start()
    await sidecar.whenReady({ timeoutMs: 30_000 })
    await sidecar.call('turn.capture', { namespace: ns, session: 's1', receipt: 'r1', user: 'Deploys go out on Tuesdays.', assistant: 'Noted.' })
  })
  after(() => sidecar.stop())

  it('lists this turn\'s open batches with a reminder, until a receipt settles them', async () => {
    const params = { namespace: ns, session: 's1' }
    assert.deepEqual(await sidecar.call('evidence.open_batches', params), { ...params, turn: 2, batches: [], nudge: null })
    const found = await call('memory_search_raw', { query: 'deploys tuesdays' })
    assert.match(found.batch_id, /^rb_\d+$/)
    assert.ok(found.evidence_refs.includes(found.hits[0].message_id))
    const open = await sidecar.call('evidence.open_batches', params)
    assert.deepEqual(open.batches.map((b) => [b.batch_id, b.state, b.tool]), [[found.batch_id, 'unassessed', 'memory_search_raw']])
    assert.match(open.nudge, new RegExp(`${found.batch_id}.*memory_assess.*memory_record_use`, 's'))
    const receipt = await call('memory_record_use', { evidence_refs: [] })
    assert.deepEqual(receipt.settles, [found.batch_id])
    assert.equal((await sidecar.call('evidence.open_batches', params)).nudge, null)
  })
})

describe('the turn-stopping listener', () => {
  it('steers once per turn, only when the sidecar names something open; forwards the session origin', async () => {
    let answer = { nudge: 'close rb_1', batches: [{ batch_id: 'rb_1' }] }
    const asked = []
    const listener = makeTurnStoppingListener({
      namespaceOf: async () => 'ns',
      openBatches: async (params) => (asked.push(params), answer),
      available: () => true,
      timeoutMs: () => 500,
    })
    const agent = fakeAgent({ id: 's1', header: {} })
    await listener({ agent, turn: 1, signal: new AbortController().signal })
    await listener({ agent, turn: 1, signal: new AbortController().signal })
    assert.equal(agent.steered.length, 1)
    assert.deepEqual(asked, [{ namespace: 'ns', session: 's1', origin: null }], 'a nudged turn is not asked again')
    const message = agent.steered[0]
    assert.equal(message.role, 'user')
    assert.deepEqual(message.content, [{ type: 'text', text: 'close rb_1' }])
    assert.deepEqual(message.source, { kind: 'plugin', plugin: 'stratagate-py' })
    assert.equal(typeof message.id, 'string')
    await listener({ agent, turn: 2, signal: new AbortController().signal })
    assert.equal(agent.steered.length, 2, 'a new turn may be nudged again')
    answer = { nudge: null, batches: [] }
    await listener({ agent, turn: 3, signal: new AbortController().signal })
    assert.equal(agent.steered.length, 2, 'nothing open: no nudge')
    // Whether a subagent is nudged is the sidecar's call (it answers no nudge for origin 'subagent'): the shim asks.
    const sub = fakeAgent({ id: 'sub', header: { origin: 'subagent' } })
    answer = { nudge: null, batches: [] }
    await listener({ agent: sub, turn: 1 })
    assert.deepEqual(asked.at(-1), { namespace: 'ns', session: 'sub', origin: 'subagent' })
    assert.equal(sub.steered.length, 0)
    const slow = makeTurnStoppingListener({
      namespaceOf: async () => 'ns',
      openBatches: () => new Promise(() => {}),
      available: () => true,
      timeoutMs: () => 50,
    })
    const waiting = fakeAgent({ id: 's2', header: {} })
    const t0 = Date.now()
    await slow({ agent: waiting, turn: 1 })
    assert.equal(waiting.steered.length, 0)
    assert.ok(Date.now() - t0 < 1000, 'a hung sidecar never holds the turn open')
    assert.equal(nudgeMessage('x').content[0].text, 'x')
  })
})

/** A stand-in for the Cordis context, with awaited serial hooks like DSH's `agent/turn-stopping`. */
function fakeContext(services = {}) {
  const listeners = new Map()
  const disposers = []
  const ctx = {
    tools: { registered: new Map(), register(def) {
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
    async serial(name, ...args) {
      for (const fn of listeners.get(name) ?? []) await fn(...args)
    },
    get: (name) => services[name],
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

describe('the plugin nudges at turn end (real sidecar)', () => {
  let ctx
  let home
  const saved = {}
  const session = { id: 'session-ev', header: { id: 'session-ev', cwd: '/work/proj-ev' }, events: [] }

  before(async () => {
    home = tempDir()
    for (const k of ['DSH_HOME', 'STRATAGATE_DB', 'STRATAGATE_JOB_BACKOFF_BASE']) saved[k] = process.env[k]
    Object.assign(process.env, { DSH_HOME: home, STRATAGATE_JOB_BACKOFF_BASE: '0' })
    delete process.env.STRATAGATE_DB
    ctx = fakeContext()
    // The recall/nudge deadline (1.5 s by default) is product behaviour, tested with stubs in the listener tests;
    // here a loaded machine must not turn a slow answer into "no memory this step".
    plugin.apply(ctx, { python: PYTHON, database: join(home, 'memory.db'), activationTimeoutMs: 60_000 })
  })

  after(async () => {
    await ctx.dispose()
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  })

  it('offers memory_assess and memory_record_use, and says how to use them', () => {
    assert.ok(ctx.tools.registered.has('memory_assess') && ctx.tools.registered.has('memory_record_use'))
    assert.match(ctx.systemPrompt.sections[0].text, /memory_assess[\s\S]*memory_record_use/)
  })

  it('steers once in a turn that left a retrieval open, and not after the agent settled it', async () => {
    for (const event of makeLog()) {
      session.events.push(event)
      ctx.emit('session/event', session, event)
    }
    const exec = (callId) => ({ agent: { session }, callId, signal: new AbortController().signal })
    const search = ctx.tools.registered.get('memory_search_raw')
    // The first call may race the sidecar's start: retry "still starting" like the model would.
    const found = await waitFor(async () => {
      try {
        return await search.execute({ query: 'pnpm' }, exec('c1'))
      } catch (error) {
        if (/still starting/.test(error.message)) return null
        throw error
      }
    }, { what: 'a search result' })
    assert.match(found.batch_id, /^rb_\d+$/)

    const agent = fakeAgent(session)
    await ctx.serial('agent/turn-stopping', { agent, turn: 3, signal: new AbortController().signal })
    assert.equal(agent.steered.length, 1)
    assert.match(agent.steered[0].content[0].text, new RegExp(found.batch_id))
    await ctx.serial('agent/turn-stopping', { agent, turn: 3, signal: new AbortController().signal })
    assert.equal(agent.steered.length, 1, 'once per turn')

    const use = ctx.tools.registered.get('memory_record_use')
    const receipt = await use.execute({ evidence_refs: [] }, exec('c2'))
    assert.deepEqual(receipt.settles, [found.batch_id])
    await ctx.serial('agent/turn-stopping', { agent, turn: 4, signal: new AbortController().signal })
    assert.equal(agent.steered.length, 1, 'nothing open any more')
  })
})
