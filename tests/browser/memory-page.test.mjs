// The Memory page in headless chromium against the standalone viewer (`stratagate ui`) on a database seeded through
// JSON-RPC (seed.py). Every wait is on an element, a response or a download, never a fixed sleep.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import {
  launchChromium,
  removeDir,
  screenshotDir,
  seedDatabase,
  startFlakyModel,
  startViewer,
  tempDir,
} from './harness.mjs'
import { englishWords, layoutProblems } from './layout.mjs'

const API = '/api/stratagate/memory'
const TABS = ['overview', 'recent', 'longterm', 'graph', 'evidence', 'imports', 'audit', 'settings']
// What shows that a tab's data has arrived (the seeded database has some of each).
const READY = {
  overview: '[data-testid=export-json]',
  recent: '[data-testid=session-item]',
  longterm: '[data-testid=event-row]',
  graph: '[data-testid=graph-node]',
  evidence: '[data-testid=receipt-row]',
  imports: '[data-testid=import-row]',
  audit: '[data-testid=audit-row]',
  settings: '[data-testid=settings-form]',
}
const WAIT = { timeout: 30_000 }
const tid = (id, attrs = '') => `[data-testid="${id}"]${attrs}`

let dir, seeded, model, viewer, browser
let overviewWithFailedJob = null // layoutProblems() of the overview while the failed job is shown

before(async () => {
  dir = tempDir('sg-browser-')
  seeded = seedDatabase(join(dir, 'memory.db'))
  // The viewer's start re-queues the seeded failed summary (the upgrade of fallback views); the scripted model fails
  // that attempt once, so the job is failed again when the page opens and the page's Retry is the one that succeeds.
  model = await startFlakyModel(1)
  viewer = await startViewer(seeded.db, {
    STRATAGATE_MODEL_BASE_URL: model.baseUrl,
    STRATAGATE_MODEL: 'scripted-model',
    STRATAGATE_MODEL_TIMEOUT: '10',
    STRATAGATE_JOB_MAX_ATTEMPTS: '1',
    STRATAGATE_JOB_BACKOFF_BASE: '0.05',
    STRATAGATE_JOB_BACKOFF_CAP: '0.2',
    // No maintenance pass: it re-queues fallback summaries too, and would take the failed job before the test does.
    STRATAGATE_MAINTENANCE_INTERVAL_HOURS: '0',
  })
  browser = await launchChromium()
})

after(async () => {
  await browser?.close()
  await viewer?.stop()
  await model?.stop()
  if (dir) removeDir(dir)
})

/** GET a route of the viewer from the test itself (ground truth for ids the page shows). */
async function api(path, query = {}) {
  const url = new URL(`${API}${path}`, viewer.url)
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, String(v))
  const res = await fetch(url)
  assert.equal(res.status, 200, `${url}: ${res.status} ${await res.clone().text()}`)
  return res.json()
}

/** Until the job has `status`: re-read at each change the viewer reports (GET /changes long poll), no fixed sleeps. */
async function waitForJob(id, status, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs
  let cursor = null
  for (;;) {
    const { jobs } = await api('/jobs', { status, limit: 200 })
    if (jobs.some((j) => j.id === id)) return
    assert.ok(Date.now() < deadline, `${id} did not become ${status} within ${timeoutMs} ms`)
    cursor = (await api('/changes', cursor === null ? { wait: 0 } : { since: cursor, wait: 5 })).cursor
  }
}

/** A fresh context (locale, viewport) with the page open on the seeded namespace; page errors fail the test. */
async function openPage(t, { locale = 'en-US', width = 1280, height = 900 } = {}) {
  const context = await browser.newContext({ locale, viewport: { width, height }, acceptDownloads: true })
  t.after(() => context.close())
  const page = await context.newPage()
  const errors = []
  page.on('pageerror', (err) => errors.push(String(err)))
  page.on('dialog', (dialog) => dialog.accept()) // confirm() before a write: yes
  t.after(() => assert.deepEqual(errors, [], 'errors thrown in the page'))
  await page.goto(viewer.url)
  const select = page.locator(tid('namespace-select'))
  await select.locator(`option[value="${seeded.namespace}"]`).waitFor({ state: 'attached', ...WAIT })
  if ((await select.inputValue()) !== seeded.namespace) await select.selectOption(seeded.namespace)
  return page
}

async function openTab(page, name) {
  const tab = page.locator(tid(`tab-${name}`))
  // A narrow page shows its sections as one menu instead of tabs.
  if (await tab.isVisible()) await tab.click()
  else await page.locator(tid('tab-menu')).selectOption(name)
  await page.waitForFunction((el) => el.getAttribute('aria-selected') === 'true', await tab.elementHandle(), WAIT)
  await page.locator(READY[name]).first().waitFor(WAIT)
}

const eventRow = (page, id) => page.locator(tid('event-row', `[data-event-id="${id}"]`))

/** Search the long-term list and wait for the page's reply to that search. */
async function searchEvents(page, words) {
  const reply = page.waitForResponse((r) => r.url().includes(`${API}/events?`) && r.url().includes(`q=${words}`))
  await page.locator(tid('event-search')).fill(words)
  await page.locator(tid('event-search')).press('Enter')
  await reply
}

/** Choose an option of the status filter and wait for the page's reply to it. */
async function filterStatus(page, option) {
  const reply = page.waitForResponse((r) => r.url().includes(`${API}/events?`))
  await page.locator(tid('event-status-filter')).selectOption(option)
  await reply
}

async function openEvent(page, id) {
  const row = eventRow(page, id)
  const open = row.locator(tid('event-open')) // the row's title button, where the page has one
  await ((await open.count()) ? open.first() : row).click()
  const detail = page.locator(tid('event-detail'))
  await detail.waitFor(WAIT)
  return detail
}

describe('the Memory page in chromium (standalone viewer)', () => {
  test('npm → pnpm: the superseded chip and the successor link, which opens pnpm', async (t) => {
    const page = await openPage(t)
    await openTab(page, 'longterm')
    const npm = eventRow(page, seeded.events.npm)
    await npm.waitFor(WAIT)
    assert.equal(await npm.getAttribute('data-status'), 'superseded')
    assert.match(await npm.locator(tid('status-chip')).first().innerText(), /superseded/i)
    assert.equal(await eventRow(page, seeded.events.pnpm).getAttribute('data-status'), 'active')

    const link = npm.locator(tid('successor-link'))
    assert.equal(await link.getAttribute('data-event-id'), seeded.events.pnpm)
    await link.click()
    const detail = page.locator(tid('event-detail'))
    await detail.getByText(seeded.quotes.pnpm).first().waitFor(WAIT)
  })

  test("an event's source opens the original message", async (t) => {
    const page = await openPage(t)
    await openTab(page, 'longterm')
    const detail = await openEvent(page, seeded.events.pnpm)
    const message = seeded.sources.pnpm[0].message_id
    await detail.locator(tid('source-link', `[data-message-id="${message}"]`)).click()
    const view = page.locator(tid('message-view', `[data-message-id="${message}"]`))
    await view.waitFor(WAIT)
    assert.match(await view.innerText(), new RegExp(seeded.quotes.pnpm.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    await view.scrollIntoViewIfNeeded()
    await page.screenshot({ path: join(screenshotDir(), 'event-sources.png'), fullPage: true })
  })

  test('the as-of control shows the graph as it was before the change', async (t) => {
    const facts = (await api('/graph', { namespace: seeded.namespace, history: true })).facts
    const npmFact = facts.find((f) => f.object === 'npm')
    const pnpmFact = facts.find((f) => f.object === 'pnpm')
    assert.ok(npmFact && pnpmFact, JSON.stringify(facts))

    const page = await openPage(t)
    await openTab(page, 'graph')
    await page.locator(tid('graph-canvas')).waitFor(WAIT)
    const fact = (f) => page.locator(tid('graph-fact', `[data-fact-id="${f.id}"]`))
    await fact(pnpmFact).waitFor(WAIT)
    assert.equal(await fact(pnpmFact).getAttribute('data-current'), 'true')

    const reply = page.waitForResponse((r) => r.url().includes(`${API}/graph?`) && r.url().includes(`as_of=${seeded.as_of_before}`))
    await page.locator(tid('as-of-input')).fill(seeded.as_of_before)
    await page.locator(tid('as-of-apply')).click()
    await reply
    await page.waitForFunction(
      ([npmId, pnpmId]) => {
        const row = (id) => document.querySelector(`[data-testid="graph-fact"][data-fact-id="${id}"]`)
        return row(npmId)?.getAttribute('data-current') === 'true' && row(pnpmId)?.getAttribute('data-current') !== 'true'
      },
      [npmFact.id, pnpmFact.id],
      WAIT,
    )
    // The drawn graph has npm as a node then.
    const nodes = await page.locator(tid('graph-node')).evaluateAll((els) => els.map((e) => e.textContent))
    assert.ok(nodes.some((n) => /(^|\W)npm(\W|$)/.test(n)), nodes.join(' | '))
    await page.screenshot({ path: join(screenshotDir(), 'graph-as-of.png'), fullPage: true })
  })

  test('forget an event: gone from search, in the audit with Undo, and Undo brings it back', async (t) => {
    const page = await openPage(t)
    await openTab(page, 'longterm')
    const id = seeded.events.jest
    await searchEvents(page, 'Jest')
    await eventRow(page, id).waitFor(WAIT)
    const detail = await openEvent(page, id)
    const forgot = page.waitForResponse((r) => r.url().endsWith(`${API}/events/forget`) && r.request().method() === 'POST')
    await detail.locator(tid('event-forget')).click()
    assert.equal((await forgot).status(), 200)
    await page.locator(tid('toast')).first().waitFor(WAIT)

    // Search shows what memory holds now: the forgotten event is gone; the filter for forgotten ones still finds it.
    await searchEvents(page, 'Jest')
    await eventRow(page, seeded.events.no_jest).waitFor(WAIT)
    await eventRow(page, id).waitFor({ state: 'detached', ...WAIT })
    await filterStatus(page, 'forgotten')
    await page.waitForFunction(
      (eid) => document.querySelector(`[data-testid="event-row"][data-event-id="${eid}"]`)?.getAttribute('data-status') === 'forgotten',
      id,
      WAIT,
    )
    await filterStatus(page, { index: 0 }) // back to the default: what memory holds

    await openTab(page, 'audit')
    const entry = page.locator(tid('audit-row')).filter({ hasText: id }).filter({ has: page.locator(tid('undo-button')) })
    await entry.first().waitFor(WAIT)
    assert.match(await entry.first().getAttribute('data-action'), /forg/)
    // The audit reads as a sentence: who did what to which event, its title quoted.
    const title = (await api('/event', { namespace: seeded.namespace, id })).title
    assert.equal((await entry.first().locator(tid('audit-sentence')).innerText()).trim(), `You forgot ${id} “${title}”`)
    const undone = page.waitForResponse((r) => r.url().endsWith(`${API}/undo`) && r.request().method() === 'POST')
    await entry.first().locator(tid('undo-button')).click()
    assert.equal((await undone).status(), 200)
    // The toast names what was undone (the forget), not the undo's own action (a restore).
    await page.locator(tid('toast')).filter({ hasText: `Undone: Forget ${id}.` }).first().waitFor(WAIT)

    await openTab(page, 'longterm')
    await searchEvents(page, 'Jest')
    await page.waitForFunction(
      (eid) => document.querySelector(`[data-testid="event-row"][data-event-id="${eid}"]`)?.getAttribute('data-status') === 'disputed',
      id,
      WAIT,
    )
  })

  test('retry a failed job: it leaves the failed list', async (t) => {
    // The viewer's start re-queued the seeded failed job and its attempt failed (see before()): wait for that
    // attempt (the model's line, then the job's status) so the page's Retry is the only attempt left.
    await model.failed(1)
    await waitForJob(seeded.failed_job, 'failed')
    const page = await openPage(t)
    await openTab(page, 'overview')
    const row = page.locator(tid('failed-job', `[data-job-id="${seeded.failed_job}"]`))
    await row.waitFor({ timeout: 60_000 })
    await page.screenshot({ path: join(screenshotDir(), 'overview-failed-job.png'), fullPage: true })
    overviewWithFailedJob = await page.evaluate(layoutProblems) // asserted by the next test
    const retried = page.waitForResponse((r) => r.url().endsWith(`${API}/jobs/retry`) && r.request().method() === 'POST')
    await row.locator(tid('retry-job')).click()
    // A retry cannot be undone: the page asks first.
    await page.locator(tid('dialog')).getByText(seeded.failed_job).first().waitFor(WAIT)
    await page.locator(tid('confirm-ok')).click()
    assert.equal((await retried).status(), 200)
    await row.waitFor({ state: 'detached', timeout: 60_000 })
    const failed = (await api('/jobs', { status: 'failed' })).jobs
    assert.ok(!failed.some((j) => j.id === seeded.failed_job), JSON.stringify(failed))
    // The user's retry is in the audit, by the user.
    await openTab(page, 'audit')
    const entry = page.locator(tid('audit-row', '[data-action="job.retried"]')).filter({ hasText: seeded.failed_job })
    await entry.first().waitFor(WAIT)
    assert.match(await entry.first().locator(tid('audit-sentence')).innerText(), new RegExp(`^You retried ${seeded.failed_job}`))
  })

  // The overview with a failed job was once too wide: a table scrolled sideways hid the row's Retry button.
  test('the overview with a failed job fits: its Retry button is not hidden in a scrolled table', () => {
    assert.deepEqual(overviewWithFailedJob, [])
  })

  test('export JSON and Markdown download the namespace', async (t) => {
    const page = await openPage(t)
    await openTab(page, 'overview')
    // This sidecar has no team database: the overview says so, and how to turn team memory on.
    assert.match(await page.locator(tid('team-status')).innerText(), /^off: set the plugin options teamDsn and teamMember/)
    const download = async (button) => {
      const [file] = await Promise.all([page.waitForEvent('download', WAIT), page.locator(tid(button)).click()])
      return { name: file.suggestedFilename(), text: readFileSync(await file.path(), 'utf8') }
    }
    const json = await download('export-json')
    assert.match(json.name, /\.json$/)
    const exported = JSON.parse(json.text)
    const text = JSON.stringify(exported)
    assert.ok(text.includes(seeded.events.pnpm) && text.includes(seeded.quotes.pnpm), 'the pnpm event is exported')
    const markdown = await download('export-markdown')
    assert.match(markdown.name, /\.md$/)
    assert.ok(markdown.text.includes('pnpm'))
  })

  test('a Chinese browser gets the Chinese UI', async (t) => {
    const page = await openPage(t, { locale: 'zh-CN' })
    await openTab(page, 'overview')
    for (const name of TABS) {
      const label = (await page.locator(tid(`tab-${name}`)).innerText()).trim()
      assert.match(label, /[\u4e00-\u9fff]/, `tab-${name} is labelled in Chinese (got "${label}")`)
    }
    await page.screenshot({ path: join(screenshotDir(), 'zh-overview.png'), fullPage: true })
  })

  test('keyboard: Tab reaches the tab list, arrow keys move, Enter and Space switch tabs', async (t) => {
    const page = await openPage(t)
    await openTab(page, 'overview')
    await page.locator('body').focus()
    const focused = () => page.evaluate(() => document.activeElement?.getAttribute('data-testid') || '')
    let at = ''
    for (let i = 0; i < 40 && !at.startsWith('tab-'); i++) {
      await page.keyboard.press('Tab')
      at = await focused()
    }
    assert.ok(at.startsWith('tab-'), 'Tab reaches a tab')
    const from = TABS.indexOf(at.slice(4))
    const next = TABS[(from + 1) % TABS.length]
    await page.keyboard.press('ArrowRight')
    assert.equal(await focused(), `tab-${next}`)
    await page.keyboard.press('Enter')
    assert.equal(await page.locator(tid(`tab-${next}`)).getAttribute('aria-selected'), 'true')
    await page.locator(READY[next]).first().waitFor(WAIT)
    await page.keyboard.press('ArrowLeft')
    assert.equal(await focused(), `tab-${TABS[from]}`)
    await page.keyboard.press(' ')
    assert.equal(await page.locator(tid(`tab-${TABS[from]}`)).getAttribute('aria-selected'), 'true')
  })

  // Every UI string of the Chinese page is Chinese: its text nodes (and placeholders) carry no English word, except
  // what the page marks as data (translate="no": titles, quotes, names, ids) and product names, units and numbers.
  test('the Chinese page has no English UI string on any tab', async (t) => {
    const page = await openPage(t, { locale: 'zh-CN' })
    const found = []
    for (const name of TABS) {
      await openTab(page, name)
      // Open what a tab folds, so its text is checked too.
      for (const d of await page.locator('.sgm-panel details').all()) await d.evaluate((el) => (el.open = true))
      if (name === 'longterm') await openEvent(page, seeded.events.pnpm)
      // The as-of date is written in the reader's order (the browser's own date picker would say 04/15/2026).
      if (name === 'graph') assert.match(await page.locator(tid('as-of-input')).inputValue(), /^\d{4}\/\d{2}\/\d{2}$/)
      const english = await page.evaluate(englishWords, '.sgm-root')
      for (const e of english) found.push(`${name}: ${e}`)
    }
    assert.deepEqual([...new Set(found)], [])
  })

  test('merge lists only events it accepts, previews both, and merges only after the confirmation', async (t) => {
    const page = await openPage(t)
    await openTab(page, 'longterm')
    const keep = seeded.events.pnpm
    const detail = await openEvent(page, keep)
    await detail.locator(tid('event-merge')).click()
    const dialog = page.locator(tid('dialog'))
    await dialog.locator(tid('merge-option')).first().waitFor(WAIT)
    const offered = await dialog.locator(tid('merge-option')).evaluateAll((els) => els.map((e) => e.getAttribute('data-event-id')))
    // Exactly what the server's merge accepts: no superseded (npm) or disputed (Jest) event, not itself.
    const accepted = (await api('/events/merge-options', { namespace: seeded.namespace, id: keep })).events.map((e) => e.id)
    assert.deepEqual(offered, accepted)
    for (const refused of [keep, seeded.events.npm, seeded.events.jest, seeded.events.no_jest]) assert.ok(!offered.includes(refused), `${refused} offered`)
    const other = offered[0]
    let merges = 0
    page.on('request', (r) => r.url().endsWith(`${API}/events/merge`) && merges++)
    await dialog.locator(tid('merge-option', `[data-event-id="${other}"]`)).click()
    // The preview: both events side by side, and nothing written yet.
    await dialog.locator(tid('merge-preview')).waitFor(WAIT)
    assert.deepEqual(await dialog.locator(tid('merge-side')).evaluateAll((els) => els.map((e) => e.getAttribute('data-event-id'))), [keep, other])
    assert.equal(merges, 0)
    await dialog.locator(tid('merge-back')).click()
    await dialog.locator(tid('merge-option')).first().waitFor(WAIT)
    await dialog.locator(tid('merge-option', `[data-event-id="${other}"]`)).click()
    const merged = page.waitForResponse((r) => r.url().endsWith(`${API}/events/merge`) && r.request().method() === 'POST')
    await dialog.locator(tid('merge-confirm')).click()
    assert.equal((await merged).status(), 200)
    const toast = page.locator(tid('toast')).filter({ hasText: `Merged ${other} into ${keep}` }).first()
    await toast.waitFor(WAIT)
    await page.screenshot({ path: join(screenshotDir(), 'merge-done.png') })
    // Undo from the toast: named as the merge it undoes.
    await toast.locator(tid('toast-undo')).click()
    await page.locator(tid('toast')).filter({ hasText: `Undone: Merge of ${other}.` }).first().waitFor(WAIT)
    assert.equal((await api('/event', { namespace: seeded.namespace, id: other })).status, 'active')
  })

  test('edit changes the time: the correction happens on the new date, not "next week"', async (t) => {
    const page = await openPage(t)
    await openTab(page, 'longterm')
    const id = seeded.events.pnpm
    const detail = await openEvent(page, id)
    await detail.locator(tid('event-edit')).click()
    const dialog = page.locator(tid('dialog'))
    await dialog.locator(tid('edit-when')).fill('2026-06-01')
    await dialog.locator(tid('edit-time-status')).selectOption('planned')
    const edited = page.waitForResponse((r) => r.url().endsWith(`${API}/events/edit`) && r.request().method() === 'POST')
    await dialog.locator(tid('edit-save')).click()
    const reply = await (await edited).json()
    assert.equal(reply.replaces, id)
    const correction = await api('/event', { namespace: seeded.namespace, id: reply.id })
    assert.equal(correction.time_original, '2026-06-01')
    assert.match(correction.happened_start, /^2026-06-01/)
    assert.equal(correction.time_status, 'planned')
    // The page shows it in the reader's locale, with its status in words.
    const shown = page.locator(tid('event-detail', `[data-event-id="${reply.id}"]`))
    await shown.waitFor(WAIT)
    assert.match(await shown.locator(tid('happened-at')).innerText(), /Jun 1, 2026/)
    assert.match(await shown.locator(tid('time-status')).innerText(), /planned/)
    const toast = page.locator(tid('toast')).filter({ hasText: `Saved as ${reply.id}` }).first()
    await toast.locator(tid('toast-undo')).click()
    await page.locator(tid('toast')).filter({ hasText: `Undone: Edit of ${id}.` }).first().waitFor(WAIT)
    assert.equal((await api('/event', { namespace: seeded.namespace, id })).status, 'active')
  })

  test('choosing a file previews its items and adds nothing until confirmed', async (t) => {
    const page = await openPage(t)
    await openTab(page, 'imports')
    const before = (await api('/imports', { namespace: seeded.namespace })).imports.length
    const file = { name: 'habits.md', mimeType: 'text/markdown', buffer: Buffer.from('# Habits\n\n- Standups start at 9:30.\n- Code review within a day.\n') }
    const dialog = page.locator(tid('dialog'))
    await page.locator(tid('import-file')).setInputFiles(file)
    await dialog.locator(tid('import-preview-item')).first().waitFor(WAIT)
    assert.deepEqual(await dialog.locator(tid('import-preview-item')).allInnerTexts(), ['Standups start at 9:30.', 'Code review within a day.'])
    await page.screenshot({ path: join(screenshotDir(), 'import-preview.png') })
    await dialog.locator(tid('dialog-cancel')).click()
    assert.equal((await api('/imports', { namespace: seeded.namespace })).imports.length, before)
    await page.locator(tid('import-file')).setInputFiles(file)
    const added = page.waitForResponse((r) => r.url().endsWith(`${API}/imports/add`) && r.request().method() === 'POST')
    await dialog.locator(tid('import-confirm')).click()
    assert.equal((await added).status(), 200)
    await page.locator(tid('import-row')).filter({ hasText: 'habits.md' }).first().waitFor(WAIT)
    // Removing it cannot be undone: asked first; Cancel keeps it.
    const row = page.locator(tid('import-row')).filter({ hasText: 'habits.md' }).first()
    await row.locator(tid('import-remove')).click()
    await dialog.locator(tid('dialog-cancel')).click()
    const importId = await row.getAttribute('data-import-id')
    assert.equal((await api('/imports', { namespace: seeded.namespace })).imports.find((i) => i.id === importId).status, 'active')
    const removed = page.waitForResponse((r) => r.url().endsWith(`${API}/imports/remove`) && r.request().method() === 'POST')
    await row.locator(tid('import-remove')).click()
    await dialog.locator(tid('confirm-ok')).click()
    assert.equal((await removed).status(), 200)
  })

  test('settings are grouped and shown once, in plain words; Advanced is folded', async (t) => {
    const page = await openPage(t)
    await openTab(page, 'settings')
    const legends = await page.locator('.sgm-settings-group > legend').allInnerTexts()
    assert.deepEqual(legends, ['Memory', 'Recall', 'Context window', 'Team memory'])
    const advanced = page.locator(tid('settings-advanced'))
    assert.equal(await advanced.evaluate((el) => el.open), false)
    // No internal name is shown as a label (they are tooltips only).
    const labels = await page.locator('.sgm-settings-form label').allInnerTexts()
    assert.ok(labels.length >= 20 && !labels.some((l) => /[a-z]+_[a-z_]+/.test(l)), labels.join(' | '))
    // The context engine's form is not repeated under another tab.
    await openTab(page, 'overview')
    assert.equal(await page.locator('.sgm-settings-form, [data-testid=settings-group-context]').count(), 0)
    await openTab(page, 'settings')
    // A change of the page's settings is audited: its toast offers Undo, named as the change it undoes.
    const before = (await api('/settings')).settings.block_turns
    await page.locator(tid('setting-block_turns')).fill(String(before + 1))
    const saved = page.waitForResponse((r) => r.url().endsWith(`${API}/settings`) && r.request().method() === 'POST')
    await page.locator(tid('settings-save')).click()
    assert.equal((await saved).status(), 200)
    assert.equal((await api('/settings')).settings.block_turns, before + 1)
    await page.locator(tid('toast')).filter({ hasText: 'Settings saved' }).locator(tid('toast-undo')).click()
    await page.locator(tid('toast')).filter({ hasText: 'Undone: Settings change.' }).first().waitFor(WAIT)
    assert.equal((await api('/settings')).settings.block_turns, before)
    await page.locator(tid('settings-advanced')).locator('summary').click()
    await page.waitForFunction(() => document.querySelector('[data-testid=settings-advanced]')?.open === true, null, WAIT)
    assert.ok(await page.locator(tid('context-digest_line')).isVisible())
    await page.screenshot({ path: join(screenshotDir(), 'settings-grouped.png'), fullPage: true })
    // A team database with a password is refused under its field, and nothing is stored.
    await page.locator(tid('setting-team_member')).fill('alice')
    await page.locator(tid('setting-team_dsn')).fill('postgresql://shop:hunter2pw@127.0.0.1:1/shop_team')
    const refused = page.waitForResponse((r) => r.url().endsWith(`${API}/settings`) && r.request().method() === 'POST')
    await page.locator(tid('settings-save')).click()
    assert.equal((await refused).status(), 400)
    await page.getByText('the page never stores a password').first().waitFor(WAIT)
    const stored = (await api('/settings')).settings
    assert.equal(stored.team_dsn, null)
    assert.equal(stored.team_member, null)
  })

  for (const width of [360, 390, 768, 1280, 1440]) {
    test(`layout at ${width} px: no label cut, no word broken, nothing overflows (every tab)`, async (t) => {
      const page = await openPage(t, { width, height: 900 })
      const found = []
      for (const name of TABS) {
        await openTab(page, name)
        for (const problem of await page.evaluate(layoutProblems)) found.push(`${name}: ${problem}`)
        if (width === 1280 || width === 390) {
          const file = width === 1280 ? `${name}.png` : `narrow-${name}.png`
          await page.screenshot({ path: join(screenshotDir(), file), fullPage: true })
        }
      }
      assert.deepEqual(found, [])
    })
  }
})
