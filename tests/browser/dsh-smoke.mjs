// Open DSH's web UI (`dsh web` with the plugin) in headless chromium, go to Settings → StrataGate Memory and report
// what is shown, as one JSON line on stdout (tests/e2e/test_e2e_memory_page.py asserts on it).
//   node tests/browser/dsh-smoke.mjs --url http://127.0.0.1:PORT/ [--screenshot FILE] [--locale en-US]
//     [--widths 360,390,768,1280 --shots DIR]
// With --widths, the window is resized to each width with the settings dialog open and every tab of the page is
// checked inside the dialog (layout.mjs: no label cut, no word broken, no text squeezed, nothing overflowing) and the
// page's own width measured (with a zh locale, also no English UI word: layout.mjs englishWords); the report's
// `widths` holds, per width, the page's width and the problems found, and DIR gets a screenshot per width and tab
// (dsh-<width>-<tab>.png; dsh-zh-… for a zh locale).
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { driveDshWeb } from './harness.mjs'
import { englishWords, layoutProblems } from './layout.mjs'

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    screenshot: { type: 'string' },
    locale: { type: 'string', default: 'en-US' },
    timeout: { type: 'string', default: '60000' },
    widths: { type: 'string', default: '' },
    shots: { type: 'string', default: '' },
  },
})
if (!args.url) throw new Error('--url is required')
const timeout = Number(args.timeout)
// The nav label (DSH's nav cell is ~112 px of ellipsised text: "StrataGate Memory" never fits there, so the
// plugin labels it "Memory"); the section's own heading says "StrataGate Memory".
const NAV_LABEL = /^\s*(StrataGate Memory|Memory|记忆)\s*$/
const HEADING = /^\s*StrataGate (Memory|记忆)\s*$/ // the page's own title, in the browser's language

const TABS = ['overview', 'recent', 'longterm', 'graph', 'evidence', 'imports', 'audit', 'settings']

/** At each width: every tab's layout problems inside the dialog, and the page's width there. */
async function checkWidths(page, dialog) {
  const out = {}
  for (const width of args.widths.split(',').map(Number)) {
    await page.setViewportSize({ width, height: 844 })
    const found = []
    for (const name of TABS) {
      const tab = dialog.locator(`[data-testid="tab-${name}"]`)
      // A narrow page shows its sections as one menu instead of tabs.
      if (await tab.isVisible()) await tab.click()
      else await dialog.locator('[data-testid="tab-menu"]').selectOption(name)
      await page.waitForFunction((el) => el.getAttribute('aria-selected') === 'true', await tab.elementHandle(), { timeout })
      // The tab's data has arrived once its loading line is gone.
      await page.waitForFunction(() => !document.querySelector('.sgm-panel .sgm-muted:only-child') || !/…$/.test(document.querySelector('.sgm-panel .sgm-muted:only-child').textContent), null, { timeout })
      for (const problem of await page.evaluate(layoutProblems, '[role="dialog"]')) found.push(`${name}: ${problem}`)
      // A Chinese browser: no English UI word in what the plugin shows (the section and the page; DSH's own nav aside).
      if (/^zh/i.test(args.locale)) for (const word of await page.evaluate(englishWords, '[role="dialog"] > nav + div > div:last-child')) found.push(`${name}: English ${word}`)
      if (args.shots) await page.screenshot({ path: join(args.shots, `dsh-${/^zh/i.test(args.locale) ? 'zh-' : ''}${width}-${name}.png`) })
    }
    const pageWidth = await dialog.locator('.sgm-root').first().evaluate((el) => Math.round(el.getBoundingClientRect().width))
    out[width] = { page_width: pageWidth, problems: found }
  }
  return out
}

await driveDshWeb(args, async (page, report) => {

  // DSH's settings shell: a trigger button (aria-haspopup=dialog) in the sidebar opens a modal with a section nav.
  const trigger = page.locator('button[aria-haspopup="dialog"]').filter({ hasText: /Settings|设置/ })
  await trigger.first().click({ timeout })
  const dialog = page.locator('[role="dialog"]')
  const nav = dialog.locator('nav button').filter({ hasText: NAV_LABEL })
  await nav.first().click({ timeout })
  report.steps.push('section opened')
  report.nav_label = (await nav.first().innerText()).trim()
  // The nav label is DSH's (ellipsis when too long): whole when its text fits its box.
  report.nav_label_cut = await nav.first().evaluate((el) => {
    const label = el.querySelector('span') || el
    return label.scrollWidth > label.clientWidth
  })

  const heading = dialog.getByRole('heading', { name: HEADING })
  await heading.first().waitFor({ timeout })
  report.heading = (await heading.first().innerText()).trim()
  const select = dialog.locator('[data-testid="namespace-select"]')
  await select.waitFor({ timeout })
  report.mounted = true
  // The options come with the page's first namespaces answer, after the select itself is mounted.
  await select.locator('option').first().waitFor({ state: 'attached', timeout })
  report.namespaces = await select.locator('option').evaluateAll((els) => els.map((e) => e.value))
  report.selected_namespace = await select.inputValue()
  // The same overview the page renders, fetched through DSH (shim route → sidecar) from inside the page.
  report.overview = await page.evaluate(async () => {
    const res = await fetch('/api/stratagate/memory/overview')
    return { status: res.status, body: await res.json() }
  })
  // The overview's row of the selected namespace (its counts), as rendered from that same route.
  const name = dialog.getByText(report.selected_namespace, { exact: true }).filter({ visible: true }).first()
  await name.waitFor({ timeout })
  report.namespace_row = await name.evaluate((el) => (el.closest('tr, li, [data-namespace]') || el.parentElement).innerText)
  report.text = (await dialog.innerText()).slice(0, 20_000)
  if (args.widths) report.widths = await checkWidths(page, dialog)
})
