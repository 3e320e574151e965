// Open DSH's web UI (`dsh web` with the plugin) in headless chromium, open the session titled --title from the
// workspace tree, and report the chat's context rows: the StrataGate Memory row's label, and its list once expanded
// (DSH's ContextInjectionRow: `[data-context-source]` beside "Context injection", a `catalog` body listing
// `[data-context-entries] li` as <code>id</code> + description). One JSON line on stdout
// (tests/e2e/test_e2e_chat_memory.py asserts on it).
//   node tests/browser/dsh-chat-row.mjs --url http://127.0.0.1:PORT/ --title TITLE [--screenshot FILE] [--locale en-US]
import { parseArgs } from 'node:util'
import { driveDshWeb } from './harness.mjs'

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    title: { type: 'string' },
    screenshot: { type: 'string' },
    locale: { type: 'string', default: 'en-US' },
    timeout: { type: 'string', default: '60000' },
  },
})
if (!args.url || !args.title) throw new Error('--url and --title are required')
const timeout = Number(args.timeout)
const LABEL = 'StrataGate Memory'

await driveDshWeb(args, async (page, report) => {

  // The session's row in the workspace tree (a treeitem holding its title); its workspace may start collapsed.
  const row = page.getByRole('treeitem').filter({ hasText: args.title })
  try {
    await row.first().waitFor({ timeout: 10_000 })
  } catch {
    report.steps.push('expanding workspaces')
    for (const folder of await page.getByRole('treeitem', { expanded: false }).all()) await folder.click()
    await row.first().waitFor({ timeout })
  }
  await row.first().click()
  report.steps.push('session opened')

  // Every context row's producer label, then ours expanded.
  const ours = page.locator('[data-context-source]').filter({ hasText: new RegExp(`^${LABEL}$`) })
  await ours.first().waitFor({ timeout })
  report.sources = (await page.locator('[data-context-source]').allInnerTexts()).map((s) => s.trim())
  report.rows = await ours.count()
  await ours.last().click()
  report.steps.push('row expanded')
  // The body of the row that holds our label: the nearest ancestor holding a context body.
  const shown = await ours.last().evaluate(async (label) => {
    const deadline = Date.now() + 20_000
    let body = null
    let header = ''
    while (Date.now() < deadline) {
      let node = label.parentElement
      while (node && !node.querySelector('[data-context-injection-body]')) node = node.parentElement
      body = node ? node.querySelector('[data-context-injection-body]') : null
      header = node ? (node.innerText.split('\n').find((line) => line.trim()) || '').trim() : ''
      if (body && body.querySelector('[data-context-entries] li')) break
      await new Promise((resolve) => requestAnimationFrame(resolve)) // the next frame, until the body renders
    }
    if (!body) return null
    return {
      header,
      form: body.getAttribute('data-context-form'),
      entries: [...body.querySelectorAll('[data-context-entries] li')].map((li) => ({
        name: (li.querySelector('code')?.innerText || '').trim(),
        description: (li.querySelector('span')?.innerText || '').trim(),
      })),
      visible: body.getBoundingClientRect().height > 0,
    }
  })
  report.row = shown
  // One context gauge: DSH's meter in the input bar; our dock (if shown) names only StrataGate's own changes.
  report.dsh_gauge = (await page.locator('style[data-plugin-css$="/ContextMeter.module.css"]').count()) > 0
  const dock = page.locator('[data-stratagate-context]')
  report.dock = (await dock.count()) ? (await dock.first().innerText()).trim() : null
})
