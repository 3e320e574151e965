// The memory service other DSH plugins inject (shim-js/service.js): what each method forwards, and how it is
// provided. The sidecar's side (service.* over a real sidecar) is tests/test_service.py and tests/js/shim.test.mjs.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { callerRequest } from '../../shim-js/namespaces.js'
import { SERVICE_METHODS, SERVICE_NAMES, makeMemoryService, provideMemoryService } from '../../shim-js/service.js'

const CONFIG = { namespaceMode: 'project', globalNamespace: 'default' }

function recorder() {
  const calls = []
  const session = { id: 's1', header: { id: 's1', cwd: '/work/app' } }
  const service = makeMemoryService({
    call: async (method, params) => (calls.push({ method, params }), { ok: method }),
    callerOf: (subject) => callerRequest(CONFIG, subject, { sessionOf: (id) => (id === 's1' ? session : undefined), cwd: '/home/dsh' }),
  })
  return { calls, service, session }
}

describe('the memory service forwards every call to the sidecar', () => {
  it('names the caller and passes the arguments as given', async () => {
    const { calls, service, session } = recorder()
    await service.searchMemories({ query: 'pnpm', types: ['decision'], limit: 3, sessionId: 's1' })
    await service.recallForSession('s1', 'which package manager', 4)
    await service.storeMemory({ type: 'context', content: 'Goal: ship', sessionId: 'gone', tags: ['x'] })
    await service.getMemory('evt_3')
    await service.getStats()
    await service.triggerMaintenance()
    await service.getSchedulerStatus()
    await service.findSimilarMemories(0.7)
    await service.getConsolidationLog(5)
    await service.forSession(session).getStats()
    const app = { mode: 'project', session: 's1', cwd: '/work/app', name: 'default' }
    const home = { mode: 'project', cwd: '/home/dsh', name: 'default' }
    assert.deepEqual(calls, [
      { method: 'service.search', params: { caller: app, query: 'pnpm', types: ['decision'], limit: 3 } },
      { method: 'service.recall', params: { caller: app, context: 'which package manager', limit: 4 } },
      // An id DSH does not know: still the caller's session, in DSH's working directory.
      { method: 'service.store', params: { caller: { ...home, session: 'gone' }, type: 'context', content: 'Goal: ship', tags: ['x'] } },
      { method: 'service.get', params: { caller: home, id: 'evt_3' } },
      { method: 'service.stats', params: { caller: home } },
      { method: 'service.maintenance', params: { caller: home } },
      { method: 'service.scheduler', params: { caller: home } },
      { method: 'service.similar', params: { caller: home, threshold: 0.7 } },
      { method: 'service.consolidation_log', params: { caller: home, limit: 5 } },
      { method: 'service.stats', params: { caller: app } },
    ])
    assert.deepEqual(Object.keys(SERVICE_METHODS).sort(), Object.keys(service).filter((k) => k !== 'forSession').sort())
  })

  it('refuses an options argument that is not an object, before any call', async () => {
    const { calls, service } = recorder()
    await assert.rejects(service.searchMemories('pnpm'), { name: 'TypeError', message: /searchMemories takes one options object \{query, types\?, limit\?\}, got string/ })
    await assert.rejects(service.storeMemory(null), /storeMemory takes one options object .*got null/)
    assert.deepEqual(calls, [])
  })

  it('is provided under both names, and a name another plugin holds is left to it', () => {
    const provided = {}
    const warnings = []
    const ctx = {
      provide(name, value) {
        if (name === 'crossSessionMemory') throw new Error('service "crossSessionMemory" has been registered at <cross-session-memory>')
        provided[name] = value
      },
    }
    const service = recorder().service
    assert.deepEqual(provideMemoryService(ctx, service, { warn: (m) => warnings.push(m) }), ['stratagateMemory'])
    assert.equal(provided.stratagateMemory, service)
    assert.match(warnings[0], /could not provide the crossSessionMemory service .*cross-session-memory.*under stratagateMemory/)
    assert.deepEqual(SERVICE_NAMES, ['stratagateMemory', 'crossSessionMemory'])
  })
})
