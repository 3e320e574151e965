// The Memory page's browser code (sidecar/stratagate/page/static/memory-page.js), its pure parts: the dictionary,
// labels, the graph layout and what a GET /changes answer refetches. Loaded in a vm with a stub window (no DOM);
// the page in a real browser is tested by tests/browser.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import vm from 'node:vm'
import { REPO } from './helpers.mjs'

const STATIC = join(REPO, 'sidecar', 'stratagate', 'page', 'static')
const SOURCE = readFileSync(join(STATIC, 'memory-page.js'), 'utf8')

function load() {
  const window = {}
  vm.runInNewContext(SOURCE, { window })
  assert.equal(typeof window.StrataGateMemoryPage.mount, 'function')
  return window.StrataGateMemoryPage._internals
}
const I = load()

const placeholders = (text) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort()

describe('dictionary', () => {
  it('has every key in English and Chinese, none empty, with the same placeholders', () => {
    const en = Object.keys(I.I18N.en).sort()
    const zh = Object.keys(I.I18N.zh).sort()
    assert.deepEqual(zh, en)
    for (const key of en) {
      assert.ok(I.I18N.en[key].trim(), `en ${key} is empty`)
      assert.ok(I.I18N.zh[key].trim(), `zh ${key} is empty`)
      assert.deepEqual(placeholders(I.I18N.zh[key]), placeholders(I.I18N.en[key]), `placeholders of ${key}`)
    }
  })

  it('holds every key the code asks for', () => {
    const used = new Set([...SOURCE.matchAll(/\bT\('([\w.]+)'\s*[,)]/g)].map((m) => m[1]))
    for (const m of SOURCE.matchAll(/translate\(lang, '([\w.]+)'\s*[,)]/g)) used.add(m[1])
    assert.ok(used.size > 100, `found only ${used.size} keys`)
    for (const key of used) assert.ok(key in I.I18N.en, `missing key ${key}`)
    // Keys built at run time: tabs, statuses, level names, setting labels, sources.
    for (const tab of I.TABS) assert.ok('tab.' + tab in I.I18N.en)
    for (const s of I.EVENT_STATUSES) assert.ok('status.' + s in I.I18N.en)
    for (let level = 0; level <= 5; level++) assert.ok('recent.levelName.' + level in I.I18N.en)
    for (const s of ['default', 'env', 'page']) assert.ok('settings.source.' + s in I.I18N.en)
  })

  it('takes a setting\'s label and help in the page\'s language from the field the sidecar sends', () => {
    const label = { en: 'Turns per block', zh: '每个区块的轮数' }
    assert.equal(I.inLang(label, 'zh'), '每个区块的轮数')
    assert.equal(I.inLang(label, 'en'), 'Turns per block')
    assert.equal(I.inLang({ en: 'Only English' }, 'zh'), 'Only English')
    assert.equal(I.inLang(undefined, 'zh'), '')
    // The labels live in the sidecar's settings table, not in this dictionary.
    assert.ok(!Object.keys(I.I18N.en).some((k) => k.startsWith('settings.field.')))
  })

  it('follows the browser language unless told', () => {
    assert.equal(I.pickLang(undefined, 'zh-CN'), 'zh')
    assert.equal(I.pickLang(undefined, 'zh-Hant-TW'), 'zh')
    assert.equal(I.pickLang(undefined, 'en-GB'), 'en')
    assert.equal(I.pickLang(undefined, 'fr'), 'en')
    assert.equal(I.pickLang(undefined, undefined), 'en')
    assert.equal(I.pickLang('en', 'zh-CN'), 'en')
    assert.equal(I.pickLang('zh', 'en-US'), 'zh')
    assert.equal(I.pickLang('de', 'zh'), 'zh')
  })

  it('fills placeholders and falls back to English, then to the key', () => {
    assert.equal(I.translate('en', 'done.forget', { id: 'evt_3' }), 'Forgot evt_3')
    assert.equal(I.translate('zh', 'done.forget', { id: 'evt_3' }), '已遗忘 evt_3')
    assert.equal(I.translate('zh', 'no.such.key'), 'no.such.key')
    assert.equal(I.translate('en', 'done.forget'), 'Forgot {id}')
  })
})

describe('labels', () => {
  it('status chips: class per status, the successor link only for a superseded event', () => {
    const sup = I.statusChip('en', 'superseded', { id: 'evt_9', title: 'Use pnpm' })
    assert.equal(sup.label, 'superseded')
    assert.equal(sup.className, 'sgm-chip sgm-chip-superseded')
    assert.deepEqual({ ...sup.successor }, { id: 'evt_9', text: '→ evt_9', title: 'Use pnpm' })
    assert.equal(I.statusChip('en', 'active', { id: 'evt_9' }).successor, null)
    assert.equal(I.statusChip('en', 'superseded', null).successor, null)
    assert.equal(I.statusChip('zh', 'disputed').label, '有争议')
    assert.equal(I.statusChip('zh', 'forgotten').label, '已遗忘')
    assert.equal(I.statusChip('en', 'archived').className, 'sgm-chip sgm-chip-archived')
    // An unknown status shows as itself, and cannot inject a class.
    const odd = I.statusChip('en', 'weird" onclick="x')
    assert.equal(odd.label, 'weird" onclick="x')
    assert.equal(odd.className, 'sgm-chip sgm-chip-weirdonclickx')
  })

  it('sizes, durations and times read as people write them', () => {
    assert.equal(I.humanBytes(0), '0 B')
    assert.equal(I.humanBytes(1023), '1023 B')
    assert.equal(I.humanBytes(1536), '1.50 KiB')
    assert.equal(I.humanBytes(3456789), '3.30 MiB')
    assert.equal(I.humanBytes(250 * 1024 ** 3), '250 GiB')
    assert.equal(I.humanBytes(null), '—')
    assert.equal(I.humanDuration('en', 42), '42 s')
    assert.equal(I.humanDuration('en', 5432), '1 h 30 min')
    assert.equal(I.humanDuration('zh', 90061), '1 天 1 小时')
    assert.equal(I.shortTime('2026-12-01T21:30:12.345Z'), '2026-12-01 21:30 UTC')
    assert.equal(I.shortTime('2026-12-01T21:30:12+00:00'), '2026-12-01 21:30 UTC')
    assert.equal(I.shortTime('2026-12-01'), '2026-12-01')
    assert.equal(I.shortTime(null), '—')
  })

  it('dates in the reader\'s locale: shown, typed and read back', () => {
    assert.equal(I.localTime('2026-12-01', 'en-US'), 'Dec 1, 2026')
    assert.equal(I.localTime('2026-12-01', 'zh-CN'), '2026年12月1日')
    assert.equal(I.localTime(null, 'en-US'), '—')
    assert.equal(I.localTime('not a time', 'en-US'), 'not a time')
    assert.equal(I.happenedText('en', { happened_start: '2026-11-30', happened_end: '2026-11-30' }, 'en-GB'), '30 Nov 2026')
    // The browser's own locale when it speaks the page's language, else that language's.
    assert.equal(I.dateLocale('en', 'en-GB'), 'en-GB')
    assert.equal(I.dateLocale('zh', 'zh-TW'), 'zh-TW')
    assert.equal(I.dateLocale('zh', 'en-US'), 'zh-CN')
    for (const [locale, typed] of [['en-US', '04/15/2026'], ['en-GB', '15/04/2026'], ['zh-CN', '2026/04/15'], ['de-DE', '15.04.2026']]) {
      assert.equal(I.dateInputText('2026-04-15', locale), typed)
      assert.equal(I.parseDateInput(typed, locale), '2026-04-15')
      assert.equal(I.parseDateInput('2026-4-15', locale), '2026-04-15') // ISO is always understood
    }
    assert.equal(I.parseDateInput('31/02/2026', 'en-GB'), null)
    assert.equal(I.parseDateInput('next week', 'en-US'), null)
  })

  it('labels of known values, and an audit change field by field', () => {
    assert.equal(I.knownLabel('zh', 'type.', 'plan'), '计划')
    assert.equal(I.knownLabel('zh', 'timeStatus.', 'planned'), '计划中')
    assert.equal(I.knownLabel('en', 'type.', 'mystery'), null)
    // (compared as JSON: the page runs in another realm)
    assert.equal(JSON.stringify(I.changeRows({ title: 'a', when: 'next week', note: { x: 1 } }, { title: 'b', when: 'next week', note: { x: 2 }, id: 'evt_4' }).map((r) => [r.field, r.before, r.after])), JSON.stringify([
      ['title', 'a', 'b'],
      ['note.x', 1, 2],
      ['id', null, 'evt_4'],
    ]))
    assert.equal(I.changeRows(null, null).length, 0)
    // Every action the page can undo has a toast that names it, in both languages.
    for (const action of ['event.forgotten', 'event.restored', 'event.pinned', 'event.unpinned', 'event.edited', 'event.merged', 'event.resolved', 'event.superseded', 'import.created', 'settings.changed']) {
      for (const lang of ['en', 'zh']) assert.ok(I.knownLabel(lang, 'undid.', action), `${lang} undid.${action}`)
    }
  })

  it('occurrence time: a date, a window, or not stated', () => {
    assert.equal(I.happenedText('en', { happened_start: null, happened_end: null }), 'not stated')
    assert.equal(I.happenedText('en', { happened_start: '2026-11-30', happened_end: '2026-11-30' }), '2026-11-30')
    assert.equal(I.happenedText('en', { happened_start: '2026-12-04', happened_end: '2026-12-05' }), '2026-12-04 – 2026-12-05')
    assert.equal(I.happenedText('zh', {}), '未说明')
  })

  it('a 400 body names its fields; anything else is one line', () => {
    const body = { error: 'params: settings.block_turns: too big', details: [{ loc: ['settings', 'block_turns'], msg: 'Input should be less than or equal to 50' }, { loc: ['settings', 'colour'], msg: 'Extra inputs are not permitted' }] }
    assert.deepEqual({ ...I.fieldErrors(body, ['block_turns', 'context_mode']) }, { block_turns: 'Input should be less than or equal to 50', _: 'Extra inputs are not permitted' })
    assert.deepEqual({ ...I.fieldErrors({ error: 'type the namespace name to confirm' }, []) }, { _: 'type the namespace name to confirm' })
    // A route's own refusal names the field in an object.
    assert.deepEqual({ ...I.fieldErrors({ error: 'settings.block_turns: too big', details: { setting: 'block_turns' } }, ['block_turns']) }, { block_turns: 'settings.block_turns: too big' })
    assert.deepEqual({ ...I.fieldErrors({ error: 'bad', details: { setting: 'colour' } }, ['block_turns']) }, { _: 'bad' })
  })

  it('the audit hides the job queue\'s bookkeeping, not a user\'s retry', () => {
    assert.equal(I.isBookkeeping({ actor: 'system', action: 'job.enqueued' }), true)
    assert.equal(I.isBookkeeping({ actor: 'system', action: 'maintenance.scheduled' }), true)
    assert.equal(I.isBookkeeping({ actor: 'user', action: 'job.retried' }), false)
    assert.equal(I.isBookkeeping({ actor: 'system', action: 'event.superseded' }), false)
    assert.equal(I.isBookkeeping(null), false)
  })

  it('a message\'s neighbours read in the order they were said', () => {
    const around = [{ id: 'msg_4', turn: 2 }, { id: 'msg_10', turn: 3 }, { id: 'msg_3', turn: 2 }, { id: 'msg_1', turn: 1 }]
    assert.deepEqual(around.sort(I.byMessageOrder).map((m) => m.id), ['msg_1', 'msg_3', 'msg_4', 'msg_10'])
  })

  it('team memory reads as lines: off with how to turn it on, else member, server, what is not synced, the error', () => {
    const en = (k, v) => I.translate('en', k, v)
    const zh = (k, v) => I.translate('zh', k, v)
    assert.deepEqual([...I.teamLines({ enabled: false }, en)], [en('team.off')])
    assert.match(I.teamLines(undefined, zh)[0], /teamDsn/)
    const on = { enabled: true, member: 'alice', server: 'postgresql://shop@db:5432/team', outbox: 0, connected: true, behind: { shop: 0 } }
    assert.deepEqual([...I.teamLines(on, en)], ['on · alice · postgresql://shop@db:5432/team', 'in sync'])
    const lagging = { ...on, outbox: 3, behind: { shop: 2, api: 0 }, last_error: 'ConnectionRefusedError: [Errno 111]' }
    assert.deepEqual([...I.teamLines(lagging, en)], [
      'on · alice · postgresql://shop@db:5432/team', '3 change(s) not pushed yet', 'shop: 2 server change(s) not pulled yet',
      'last error: ConnectionRefusedError: [Errno 111]',
    ])
  })

  it('dense search reads as one line', () => {
    assert.equal(I.denseLine({ state: 'ready', model: 'all-MiniLM-L6-v2', dim: 384, vectors: { event: 6 } }), 'ready · all-MiniLM-L6-v2 · 384d')
    assert.equal(I.denseLine({ other: 1 }), '{"other":1}')
    assert.equal(I.denseLine(null), '—')
  })

  it('query strings leave out empty params', () => {
    assert.equal(I.queryString({ namespace: 'my proj', q: '', status: 'active,superseded', offset: 0, as_of: null }), 'namespace=my%20proj&status=active%2Csuperseded&offset=0')
  })

  it('Undo reverses the one entry of the action the audit can undo (the anchor of a compound action)', () => {
    const entries = [
      { id: 120, action: 'event.resolved', undo: { label: 'Back to disputed' } },
      { id: 119, action: 'event.settled', undo: null },
      { id: 117, action: 'event.settled', undo: null },
      { id: 90, action: 'event.forgotten', undo: { label: 'Restore evt_1' } },
    ]
    assert.equal(I.undoTarget({ audit_ids: [117, 118, 119, 120] }, entries), 120)
    assert.equal(I.undoTarget({ audit_ids: [117, 119] }, entries), null)
    assert.equal(I.undoTarget({ audit_ids: [91] }, entries), null)
    assert.equal(I.undoTarget({ audit_ids: [117], undo_audit_id: 117 }, entries), 117)
    assert.equal(I.undoTarget({}, entries), null)
    assert.equal(I.undoTarget({ audit_ids: [120] }, undefined), null)
  })
})

describe('graph layout', () => {
  const nodes = ['project', 'pnpm', 'npm', 'ci', 'jest', 'redis', 'api'].map((id, i) => ({ id, name: id, kind: 'tool', degree: i }))
  const edges = [
    { id: 'fact_1', source: 'project', target: 'pnpm' },
    { id: 'fact_2', source: 'project', target: 'npm' },
    { id: 'fact_3', source: 'project', target: 'ci' },
    { id: 'fact_4', source: 'ci', target: 'jest' },
    { id: 'fact_5', source: 'api', target: 'redis' },
    { id: 'fact_6', source: 'api', target: 'ghost' },
  ]

  it('is deterministic: the same graph in any order gives the same positions', () => {
    const a = I.layoutGraph(nodes, edges, { width: 800, height: 500 })
    const b = I.layoutGraph(nodes, edges, { width: 800, height: 500 })
    const c = I.layoutGraph(nodes.slice().reverse(), edges.slice().reverse(), { width: 800, height: 500 })
    assert.deepEqual(a, b)
    assert.deepEqual(c, a)
    assert.deepEqual(Object.keys(a).sort(), nodes.map((n) => n.id).sort())
  })

  it('keeps nodes inside the margin box and apart', () => {
    for (const [width, height, margin] of [[800, 500, 60], [330, 380, 40]]) {
      const pos = I.layoutGraph(nodes, edges, { width, height, margin })
      const points = Object.values(pos)
      for (const p of points) {
        assert.ok(p.x >= margin && p.x <= width - margin, `x ${p.x} in ${width}`)
        assert.ok(p.y >= margin && p.y <= height - margin, `y ${p.y} in ${height}`)
      }
      for (let i = 0; i < points.length; i++) for (let j = i + 1; j < points.length; j++) assert.ok(Math.hypot(points[i].x - points[j].x, points[i].y - points[j].y) > 20, 'two nodes overlap')
    }
  })

  it('linked nodes sit closer than unlinked ones', () => {
    const pos = I.layoutGraph(nodes, edges, { width: 800, height: 500 })
    const d = (a, b) => Math.hypot(pos[a].x - pos[b].x, pos[a].y - pos[b].y)
    assert.ok(d('project', 'pnpm') < d('pnpm', 'redis'))
    assert.ok(d('api', 'redis') < d('redis', 'jest'))
  })

  it('handles no node, one node and labels at the edges', () => {
    assert.deepEqual({ ...I.layoutGraph([], []) }, {})
    assert.deepEqual({ ...I.layoutGraph([{ id: 'x' }], [], { width: 400, height: 300 }).x }, { x: 200, y: 150 })
    assert.equal(I.labelShift('GitHub Actions', 40, 390), 14)
    assert.equal(I.labelShift('npm', 200, 390), 0)
    assert.ok(I.labelShift('知识图谱节点', 380, 390) < 0)
  })
})

describe('live updates', () => {
  it('a change refetches the open tab only when it touches that tab', () => {
    assert.deepEqual({ ...I.refetchPlan('longterm', ['events']) }, { tab: true, namespaces: false })
    assert.deepEqual({ ...I.refetchPlan('longterm', ['jobs', 'blocks']) }, { tab: false, namespaces: false })
    assert.deepEqual({ ...I.refetchPlan('overview', ['jobs']) }, { tab: true, namespaces: false })
    assert.deepEqual({ ...I.refetchPlan('recent', ['blocks']) }, { tab: true, namespaces: false })
    assert.deepEqual({ ...I.refetchPlan('recent', ['events', 'graph']) }, { tab: false, namespaces: false })
    assert.deepEqual({ ...I.refetchPlan('graph', ['graph']) }, { tab: true, namespaces: false })
    assert.deepEqual({ ...I.refetchPlan('audit', ['namespaces']) }, { tab: false, namespaces: true })
    assert.deepEqual({ ...I.refetchPlan('settings', []) }, { tab: false, namespaces: false })
    assert.deepEqual({ ...I.refetchPlan('imports', ['imports']) }, { tab: true, namespaces: false })
  })

  it('every tab listens to some area, and only to areas GET /changes reports', () => {
    const areas = new Set(['jobs', 'blocks', 'events', 'graph', 'imports', 'audit', 'evidence', 'settings', 'namespaces'])
    assert.deepEqual(Object.keys(I.TAB_AREAS).sort(), [...I.TABS].sort())
    for (const [tab, wanted] of Object.entries(I.TAB_AREAS)) {
      assert.ok(wanted.length, tab)
      for (const a of wanted) assert.ok(areas.has(a), `${tab}: ${a}`)
    }
  })
})

describe('the source', () => {
  it('never parses markup: text reaches the DOM through textContent and text nodes', () => {
    for (const bad of ['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'document.write', 'DOMParser', 'eval(', 'new Function']) assert.ok(!SOURCE.includes(bad), bad)
  })

  it('carries every data-testid hook of the contract', () => {
    const hooks = [
      'namespace-select', 'failed-job', 'retry-job', 'session-item', 'block-item', 'level-button', 'block-view', 'event-search', 'event-status-filter', 'event-row', 'status-chip',
      'successor-link', 'event-detail', 'source-link', 'message-view', 'event-forget', 'event-restore', 'event-pin', 'event-edit', 'event-merge', 'event-resolve', 'graph-canvas',
      'graph-node', 'graph-fact', 'as-of-input', 'as-of-apply', 'receipt-row', 'assessment-row', 'import-row', 'import-file', 'import-remove', 'audit-row', 'undo-button',
      'export-json', 'export-markdown', 'delete-namespace', 'delete-confirm-input', 'delete-confirm-button', 'settings-form', 'settings-save', 'toast',
    ]
    for (const hook of hooks) assert.ok(SOURCE.includes(`testid: '${hook}'`), hook)
    assert.ok(SOURCE.includes("testid: 'tab-' + name"))
    assert.ok(SOURCE.includes("testid: 'setting-' + f.name"))
    assert.deepEqual([...I.TABS], ['overview', 'recent', 'longterm', 'graph', 'evidence', 'imports', 'audit', 'settings'])
  })

  it('asks only for routes of the Memory page, relative to its api base', () => {
    const paths = new Set([...SOURCE.matchAll(/\b(?:get|post|act)\('(\/[\w/]*)'/g)].map((m) => m[1]))
    const known = ['/overview', '/jobs/retry', '/sessions', '/blocks', '/block', '/message', '/changes', '/export', '/events', '/event', '/graph', '/evidence', '/audit', '/imports', '/imports/add', '/imports/remove', '/events/edit', '/events/forget', '/events/restore', '/events/pin', '/events/merge', '/events/resolve', '/undo', '/namespaces/delete', '/settings', '/events/merge-options', '/imports/preview', '/context-settings']
    for (const p of paths) assert.ok(known.includes(p), `unexpected route ${p}`)
    assert.ok(paths.size >= 20)
    assert.ok(!/fetch\((?!url)/.test(SOURCE.replace('win.fetch(url', '')), 'one fetch, in call()')
  })

  it('the standalone page loads the same file, with no inline script', () => {
    const html = readFileSync(join(STATIC, 'index.html'), 'utf8')
    assert.match(html, /<script src="\/api\/stratagate\/memory\/assets\/memory-page\.js" data-mount="body" data-api="\/api\/stratagate\/memory"><\/script>/)
    assert.equal((html.match(/<script/g) || []).length, 1)
    assert.doesNotMatch(html, /<style/)
  })
})
