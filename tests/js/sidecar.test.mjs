// The JSON-RPC client against the REAL Python sidecar (`python -m stratagate serve`), over real stdio.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { CaptureQueue } from '../../shim-js/capture.js'
import { methodFor } from '../../shim-js/namespaces.js'
import { RpcError, SidecarProcess, SidecarUnavailableError } from '../../shim-js/sidecar-process.js'
import { Spool } from '../../shim-js/spool.js'
import { FALLBACK_TOOLS, toolsKey } from '../../shim-js/tools.js'
import { eventsOfTurn } from '../../shim-js/turns.js'
import { makeLog } from './fixtures.mjs'
import { cleanEnv, quietLog, sidecarPython, tempDir, waitFor } from './helpers.mjs'

const PYTHON = sidecarPython()

const SUMMARY = {
  title: 'Port and failing test',
  tags: ['tests'],
  summary: 'The server listens on 8080; the api user test fails.',
  key_facts: ['Server port is 8080', 'api/user.test.ts fails'],
  has_durable_facts: false, // transport tests: no event_extraction job behind the summary
}

function start(options = {}) {
  const dir = tempDir()
  const sidecar = new SidecarProcess({
    command: PYTHON,
    args: ['-m', 'stratagate', 'serve'],
    env: cleanEnv({ DSH_HOME: dir, STRATAGATE_DB: join(dir, 'memory.db'), STRATAGATE_BLOCK_TURNS: '1', STRATAGATE_JOB_BACKOFF_BASE: '0', STRATAGATE_DENSE: 'off', ...options.env }),
    log: quietLog,
    backoffBaseMs: 50,
    ...options.sidecar,
  })
  sidecar.start()
  return { sidecar, dir }
}

const turn = (n, extra = {}) => ({
  session: 's1',
  receipt: `dsh:s1:turn:${n}`,
  user: n === 1 ? 'What port does the server use?' : 'Run the tests with pnpm please.',
  assistant: n === 1 ? 'It listens on 8080.' : 'The api user test fails.',
  tools: [{ name: 'read', arguments: { path: 'src/app.ts' }, result: 'export const port = 8080;', is_error: false, call_id: `c${n}` }],
  started_at: `2026-05-01T10:0${n}:00.000Z`,
  ended_at: `2026-05-01T10:0${n}:30.000Z`,
  end_reason: 'completed',
  ...extra,
})

describe('sidecar JSON-RPC client (real sidecar)', () => {
  let sidecar
  let namespace
  const hostRequests = []
  const notifications = []
  let answer = async () => ({ text: '', tool_calls: [{ name: 'stratagate_summarize_block', arguments: JSON.stringify(SUMMARY) }], finish_reason: 'tool_calls', model: 'js-test' })

  before(async () => {
    ;({ sidecar } = start({
      sidecar: {
        onRequest: async (method, params) => {
          hostRequests.push({ method, params })
          return answer(method, params)
        },
        onNotification: (method, params) => notifications.push({ method, params }),
      },
    }))
    await sidecar.whenReady({ timeoutMs: 30_000 })
  })
  after(() => sidecar.stop())

  it('pings: ready, with the sidecar version', async () => {
    assert.equal(sidecar.state, 'ready')
    assert.equal(sidecar.version, '0.1.0')
    const pong = await sidecar.call('system.ping')
    assert.deepEqual(pong, { pong: true, version: '0.1.0' })
  })

  it('resolves a project namespace from a working directory', async () => {
    const r = await sidecar.call('namespace.resolve', { mode: 'project', cwd: '/work/proj' })
    assert.match(r.namespace, /^project:proj:[0-9a-f]{16}$/)
    namespace = r.namespace
    const again = await sidecar.call('namespace.resolve', { mode: 'project', cwd: '/work/proj' })
    assert.equal(again.namespace, namespace)
  })

  it('captures through the spool: acknowledged turns leave it, a resend is a duplicate', async () => {
    const spool = new Spool(join(tempDir(), 'spool'))
    spool.open()
    const captured = []
    const queue = new CaptureQueue({
      spool,
      sidecar,
      namespace: async (req) => (await sidecar.call('namespace.resolve', req)).namespace,
      onCaptured: (ack) => captured.push(ack),
      log: quietLog,
    })
    queue.enqueue({ resolve: { mode: 'project', cwd: '/work/proj' }, params: turn(1) })
    assert.equal(spool.depth, 1, 'spooled before it is sent')
    assert.equal(await queue.drain(20_000), true)
    assert.equal(spool.depth, 0)
    assert.equal(captured.length, 1)
    assert.equal(captured[0].duplicate, false)
    assert.match(captured[0].turn_id, /^turn_\d+$/)
    const dup = await sidecar.call('turn.capture', { namespace, ...turn(1) })
    assert.equal(dup.duplicate, true)
  })

  it('delivers raw turn events: the sidecar folds them, a resend is a duplicate, a record it refuses is set aside', async () => {
    const dir = join(tempDir(), 'spool')
    const spool = new Spool(dir)
    spool.open()
    const captured = []
    const queue = new CaptureQueue({
      spool,
      sidecar,
      namespace: async (req) => (await sidecar.call(methodFor(req), req)).namespace,
      onCaptured: (ack) => captured.push(ack),
      log: quietLog,
    })
    const log = makeLog()
    const turnOne = { session: 'raw-s', turn: 1, events: eventsOfTurn(log, 1), canonical: {}, origin: null, capture_subagents: false }
    const resolve = { mode: 'project', session: 'raw-s', cwd: '/work/proj-raw' }
    queue.enqueue({ resolve, raw: turnOne })
    queue.enqueue({ resolve, raw: { ...turnOne, origin: 'subagent', session: 'raw-sub' } })
    queue.enqueue({ resolve, raw: { ...turnOne, turn: 9, events: [{ type: 'turn/start', data: { turn: 9 } }, { data: {} }] } })
    assert.equal(await queue.drain(60_000), true)
    assert.deepEqual(captured.map((a) => [a.captured, a.receipt, a.skipped]), [
      [true, 'dsh:raw-s:turn:1', null],
      [false, null, 'subagent session (captureSubagents is off)'],
    ])
    assert.match(readFileSync(join(dir, 'rejected.jsonl'), 'utf8'), /events\.1\.type/)
    queue.enqueue({ resolve, raw: turnOne })
    assert.equal(await queue.drain(60_000), true)
    assert.equal(captured.at(-1).duplicate, true)
  })

  it('answers host.llm.complete from a JS callback, and the summary job completes', async () => {
    await waitFor(() => notifications.find((n) => n.method === 'jobs.changed' && n.params.status === 'done'), { what: 'jobs.changed done' })
    const request = hostRequests.find((r) => r.method === 'host.llm.complete')
    assert.ok(request, 'the sidecar asked the host for a model call')
    assert.equal(request.params.tool.name, 'stratagate_summarize_block')
    assert.equal(request.params.messages[0].role, 'system')
    assert.ok(request.params.max_tokens > 0)
    const blocks = await sidecar.call('tools.call', { namespace, session: 's1', name: 'memory_get_blocks', arguments: {} })
    assert.equal(blocks.blocks.length, 1)
    assert.equal(blocks.blocks[0].status, 'ready')
  })

  it('lists the tools the shim registers before the sidecar answers (no drift)', async () => {
    const specs = await sidecar.call('tools.list')
    for (const name of ['memory_expand_block', 'memory_get_blocks', 'memory_search_raw']) {
      assert.ok(specs.some((s) => s.name === name), name)
    }
    assert.equal(toolsKey(specs), toolsKey(FALLBACK_TOOLS), 'plugin/tools.json must match the sidecar tools.list (run `stratagate tools > plugin/tools.json`)')
  })

  it('calls a tool, and turns sidecar errors into errors with the sidecar message', async () => {
    const found = await sidecar.call('tools.call', { namespace, session: 's1', name: 'memory_search_raw', arguments: { query: 'port 8080' }, call_id: 'x1' })
    assert.ok(found.hits.length >= 1)
    assert.ok(found.hits.some((h) => /8080/.test(h.text)))
    await assert.rejects(
      sidecar.call('tools.call', { namespace, session: 's1', name: 'memory_search_raw', arguments: { query: 'x', limit: 99 } }),
      (error) => error instanceof RpcError && error.code === -32602 && /limit/.test(error.message),
    )
    await assert.rejects(
      sidecar.call('tools.call', { namespace: 'nope', session: 's1', name: 'memory_get_blocks', arguments: {} }),
      (error) => error instanceof RpcError && error.code === -32004 && /unknown namespace/.test(error.message),
    )
  })

  it('renders activation text byte-stably, empty for an unknown namespace', async () => {
    const a = await sidecar.call('activation.render', { namespace, session: 'other-session', query: 'port' })
    const b = await sidecar.call('activation.render', { namespace, session: 'other-session', query: 'port' })
    assert.ok(a.text.length > 0)
    assert.equal(a.text, b.text)
    assert.deepEqual(await sidecar.call('activation.render', { namespace: 'nobody', session: 's' }).then((r) => r.text), '')
  })

  it('reports a failing host model call back to the sidecar as a JSON-RPC error', async () => {
    answer = async () => {
      throw new Error('no model configured in DSH')
    }
    const before = notifications.length
    await sidecar.call('turn.capture', { namespace, ...turn(2) })
    const failed = await waitFor(() => notifications.slice(before).find((n) => n.method === 'jobs.changed' && n.params.error), { what: 'failed attempt' })
    assert.match(failed.params.error, /no model configured in DSH/)
  })
})

describe('sidecar process lifecycle (real sidecar)', () => {
  it('restarts after a crash; calls in flight fail, later calls work', async () => {
    const { sidecar } = start()
    try {
      await sidecar.whenReady({ timeoutMs: 30_000 })
      const firstPid = sidecar.pid
      const ready = []
      sidecar.onReady = (info) => ready.push(info)
      // Stopped first, so the call is surely in flight (unanswered) when the process dies: a running sidecar can
      // answer system.info before the kill lands.
      process.kill(firstPid, 'SIGSTOP')
      const inflight = sidecar.request('system.info', undefined, { timeoutMs: 10_000 })
      process.kill(firstPid, 'SIGKILL')
      await assert.rejects(inflight, (e) => e instanceof SidecarUnavailableError || /did not answer|exited/.test(e.message))
      await waitFor(() => sidecar.state === 'ready' && sidecar.pid !== firstPid, { what: 'restart' })
      assert.equal(sidecar.restarts, 1)
      assert.equal(ready.length, 1, 'onReady runs again after a restart (re-list tools, replay the spool)')
      assert.match(sidecar.lastError, /signal SIGKILL/)
      assert.deepEqual(await sidecar.call('system.ping'), { pong: true, version: '0.1.0' })
    } finally {
      await sidecar.stop()
    }
  })

  it('gives up after repeated crashes with a clear status', async () => {
    const sidecar = new SidecarProcess({ command: PYTHON, args: ['-c', 'import sys; sys.exit(3)'], env: cleanEnv(), log: quietLog, backoffBaseMs: 5, maxCrashes: 3 })
    sidecar.start()
    await waitFor(() => sidecar.state === 'failed', { what: 'failed state' })
    assert.equal(sidecar.crashes.length, 3)
    assert.match(sidecar.lastError, /gave up restarting the sidecar: 3 crashes/)
    await assert.rejects(sidecar.call('system.ping'), (e) => e instanceof SidecarUnavailableError && /gave up/.test(e.message))
  })

  it('does not restart a sidecar that cannot start (exit code 2), and says why', async () => {
    const { sidecar } = start({ env: { STRATAGATE_BLOCK_TURNS: 'zero' } })
    await waitFor(() => sidecar.state === 'failed', { what: 'failed state' })
    assert.equal(sidecar.restarts, 0)
    assert.match(sidecar.lastError, /exit code 2/)
    assert.match(sidecar.lastError, /STRATAGATE_BLOCK_TURNS/)
  })

  it('reports a missing interpreter as failed', async () => {
    const sidecar = new SidecarProcess({ command: '/nonexistent/python3', env: cleanEnv(), log: quietLog })
    sidecar.start()
    await waitFor(() => sidecar.state === 'failed', { what: 'failed state' })
    assert.match(sidecar.lastError, /could not run \/nonexistent\/python3/)
  })

  it('stops cleanly: system.shutdown, exit code 0', async () => {
    const { sidecar } = start({ env: { STRATAGATE_BLOCK_TURNS: '1000' } }) // no block, so no summary job runs
    await sidecar.whenReady({ timeoutMs: 30_000 })
    // A capture waits for the sidecar's warm-up (the tokenizer build, ~1 s idle and several seconds on a loaded
    // machine). The sidecar's stop waits for that thread too, so stopping in the middle of it could outlast the
    // 2.5 s grace and be SIGKILLed: a property of when the test stops, not of a clean stop.
    await sidecar.call('turn.capture', { namespace: 'stop', session: 's', receipt: 'stop-1', user: 'warm', assistant: 'up' }, { timeoutMs: 60_000 })
    const child = sidecar.child
    const exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
    let drained = false
    await sidecar.stop({ drain: async () => (drained = true) })
    assert.equal(drained, true)
    assert.deepEqual(await exit, { code: 0, signal: null })
    assert.equal(sidecar.state, 'stopped')
  })

  it('kills a sidecar that does not exit within the grace period', async () => {
    const sidecar = new SidecarProcess({
      command: PYTHON,
      // Answers ping, ignores everything else and never exits on its own.
      args: ['-c', 'import sys,json\nfor l in sys.stdin:\n m=json.loads(l)\n if m.get("method")=="system.ping": print(json.dumps({"jsonrpc":"2.0","id":m["id"],"result":{"pong":True,"version":"x"}}),flush=True)\nimport time\ntime.sleep(60)'],
      env: cleanEnv(),
      log: quietLog,
    })
    sidecar.start()
    await sidecar.whenReady({ timeoutMs: 10_000 })
    const child = sidecar.child
    const exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal)))
    const t0 = Date.now()
    await sidecar.stop({ graceMs: 300 })
    assert.equal(await exit, 'SIGKILL')
    assert.ok(Date.now() - t0 < 5000)
  })
})

describe('a disposed session (real sidecar)', () => {
  it('is closed behind its turns through the spool: the sidecar seals the open tail into a short block', async () => {
    const { sidecar } = start({ env: { STRATAGATE_BLOCK_TURNS: '6', STRATAGATE_MODEL_ROUTE: 'none' } })
    try {
      await sidecar.whenReady({ timeoutMs: 30_000 })
      const spool = new Spool(join(tempDir(), 'spool'))
      spool.open()
      const namespaceOf = async (req) => (await sidecar.call(methodFor(req), req)).namespace
      const queue = new CaptureQueue({ spool, sidecar, namespace: namespaceOf, log: quietLog })
      const resolve = { mode: 'project', session: 'tail-s', cwd: '/work/proj-tail' }
      const raw = { session: 'tail-s', turn: 1, events: eventsOfTurn(makeLog(), 1), canonical: {}, origin: null, capture_subagents: false }
      queue.enqueue({ resolve, raw })
      queue.enqueue({ resolve, close: { session: 'tail-s' } })
      assert.equal(spool.depth, 2, 'the close is spooled behind the turn')
      assert.equal(await queue.drain(60_000), true)
      assert.equal(queue.captured, 1, 'a close is no captured turn')
      const namespace = await namespaceOf(resolve)
      const listing = await sidecar.call('tools.call', { namespace, session: 'tail-s', name: 'memory_get_blocks', arguments: {} })
      assert.deepEqual(listing.blocks.map((b) => b.turns), [[1, 1]])
      assert.equal(listing.open_turns, 0)
    } finally {
      await sidecar.stop()
    }
  })
})
