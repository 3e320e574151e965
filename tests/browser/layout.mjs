// Layout checks run inside the page (page.evaluate(layoutProblems, scope?)): no label cut (by its own box or hidden by
// a scrolling ancestor), no word broken across lines (labels and any other text), no text squeezed into a box
// narrower than a few characters, no box whose text overflows it, no sideways scrolling of the page. `scope` (a CSS
// selector, default the whole body) limits the checks to what the page draws, e.g. inside DSH's settings dialog.
// Returns a list of problems (empty = fine).
export function layoutProblems(scope) {
  const problems = []
  const base = (scope && document.querySelector(scope)) || document.body
  // A word: what lies between spaces, hyphens and dashes (a line may break after "zero-"); Chinese characters and
  // punctuation are breaks too (Chinese text wraps between any two characters by design).
  const WORD = /[^\s\-\u2010-\u2014\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]+/g
  const describe = (el) => {
    const id = el.getAttribute('data-testid')
    const text = (el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 40)
    return `<${el.tagName.toLowerCase()}${id ? ` data-testid=${id}` : ''}> "${text}"`
  }
  const shown = (el) => {
    const box = el.getBoundingClientRect()
    return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== 'hidden'
  }
  const inside = (el, selector) => el.closest(selector) !== null
  // The nearest ancestor that hides part of the element (overflow other than visible, e.g. a scrolling table box).
  const clippedBy = (el) => {
    const box = el.getBoundingClientRect()
    // Up to the scope's own box: above it (DSH's app shell) sit boxes a fixed dialog is not laid out in.
    const top = base === document.body ? document.documentElement : base.parentElement
    for (let up = el.parentElement; up && up !== top; up = up.parentElement) {
      if (getComputedStyle(up).overflowX === 'visible') continue
      const edge = up.getBoundingClientRect()
      const left = edge.left + up.clientLeft
      if (box.left < left - 1 || box.right > left + up.clientWidth + 1) return up
    }
    return null
  }

  if (document.documentElement.scrollWidth > window.innerWidth + 1) {
    problems.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} > ${window.innerWidth}`)
  }

  // Labels: the whole text fits its box, and no word is split over two lines.
  const labels = '[role=tab], button, label, th, legend, h1, h2, h3, summary, [data-testid=status-chip]'
  const lineCount = (node, start, end) => {
    const range = document.createRange()
    range.setStart(node, start)
    range.setEnd(node, end)
    return new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top))).size
  }
  for (const el of base.querySelectorAll(labels)) {
    if (!shown(el) || inside(el, 'svg')) continue
    const style = getComputedStyle(el)
    if (style.display !== 'inline' && el.scrollWidth > el.clientWidth + 1) {
      problems.push(`label cut: ${describe(el)} (${el.scrollWidth} > ${el.clientWidth})`)
    }
    if (style.textOverflow === 'ellipsis' && el.scrollWidth > el.clientWidth) problems.push(`label ellipsised: ${describe(el)}`)
    const clip = clippedBy(el)
    if (clip) problems.push(`label clipped by ${describe(clip)}: ${describe(el)}`)
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT)
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement && inside(node.parentElement, 'code')) continue // ids and paths may wrap anywhere
      for (const word of node.data.matchAll(WORD)) {
        const range = document.createRange()
        range.setStart(node, word.index)
        range.setEnd(node, word.index + word[0].length)
        const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)))
        if (lines.size > 1) problems.push(`word broken over ${lines.size} lines: "${word[0]}" in ${describe(el)}`)
      }
    }
  }

  // Any text: no word split over lines (except ids and paths in <code>, and pre-formatted content), and no text
  // that wraps inside a box narrower than three characters (a squeezed column breaks words letter by letter).
  const texts = document.createTreeWalker(base, NodeFilter.SHOW_TEXT)
  for (let node = texts.nextNode(); node; node = texts.nextNode()) {
    const parent = node.parentElement
    if (!parent || !node.data.trim() || !shown(parent) || inside(parent, 'svg, code, pre, .sgm-pre, script, style, option')) continue
    const style = getComputedStyle(parent)
    const box = parent.getBoundingClientRect()
    const size = parseFloat(style.fontSize) || 14
    if (box.width < 3 * size && node.data.trim().length > 3 && lineCount(node, 0, node.data.length) > 1) {
      problems.push(`text squeezed into ${Math.round(box.width)} px: ${describe(parent)}`)
    }
    for (const word of node.data.matchAll(WORD)) {
      if (word[0].length < 2) continue
      const lines = lineCount(node, word.index, word.index + word[0].length)
      if (lines > 1) problems.push(`word broken over ${lines} lines: "${word[0].slice(0, 30)}" in ${describe(parent)}`)
    }
  }

  // Any other box with visible overflow: its content must fit (a scrolling box is fine, it scrolls).
  for (const el of base.querySelectorAll('*')) {
    if (!shown(el) || inside(el, 'svg') || ['INPUT', 'SELECT', 'TEXTAREA', 'OPTION'].includes(el.tagName)) continue
    const style = getComputedStyle(el)
    if (style.display === 'inline' || style.overflowX !== 'visible') continue
    if (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0) {
      problems.push(`content overflows: ${describe(el)} (${el.scrollWidth} > ${el.clientWidth})`)
    }
  }
  return [...new Set(problems)]
}

// English words in what `scope` shows (run inside the page: page.evaluate(englishWords, scope)), for a Chinese page:
// its text nodes and placeholders, except what the page marks as data (translate="no": titles, quotes, names),
// code, and product and format names, units, block levels (L0–L5) and ids (evt_3, imp_1…). Returns the words found.
export function englishWords(scope) {
  const ALLOWED = /^(StrataGate|DSH|JSON|Markdown|ChatGPT|mem0|token|tokens|UTC|KiB|MiB|GiB|TiB|B|L[0-5]|[a-z]+_\d+)$/
  const out = []
  const skip = (el) => !el || el.closest('[translate="no"], code, svg, script, style, .sgm-pre')
  // A version number (0.1.0-rc.8) is data, not a word of the UI.
  const VERSION = /\b\d+(?:\.\d+)+(?:-[0-9A-Za-z.]+)?/g
  const check = (text, where) => {
    for (const word of text.replace(VERSION, ' ').match(/[A-Za-z][A-Za-z0-9'’_-]*/g) || []) if (!ALLOWED.test(word)) out.push(`${word} in ${where}: "${text.trim().slice(0, 60)}"`)
  }
  for (const root of document.querySelectorAll(scope)) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT)
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (!n.data.trim() || skip(n.parentElement)) continue
      check(n.data, n.parentElement.tagName.toLowerCase())
    }
    for (const el of root.querySelectorAll('[placeholder]')) if (!skip(el)) check(el.getAttribute('placeholder'), 'placeholder')
  }
  return [...new Set(out)]
}
