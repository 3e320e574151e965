// Layout checks run inside the page (page.evaluate(layoutProblems)): no label cut (by its own box or hidden by a
// scrolling ancestor), no word broken across lines, no box whose text overflows it, no sideways scrolling of the page.
// Returns a list of problems (empty = fine).
export function layoutProblems() {
  const problems = []
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
    for (let up = el.parentElement; up && up !== document.documentElement; up = up.parentElement) {
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
  for (const el of document.querySelectorAll(labels)) {
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
      for (const word of node.data.matchAll(/\S+/g)) {
        const range = document.createRange()
        range.setStart(node, word.index)
        range.setEnd(node, word.index + word[0].length)
        const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)))
        if (lines.size > 1) problems.push(`word broken over ${lines.size} lines: "${word[0]}" in ${describe(el)}`)
      }
    }
  }

  // Any other box with visible overflow: its content must fit (a scrolling box is fine, it scrolls).
  for (const el of document.body.querySelectorAll('*')) {
    if (!shown(el) || inside(el, 'svg') || ['INPUT', 'SELECT', 'TEXTAREA', 'OPTION'].includes(el.tagName)) continue
    const style = getComputedStyle(el)
    if (style.display === 'inline' || style.overflowX !== 'visible') continue
    if (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0) {
      problems.push(`content overflows: ${describe(el)} (${el.scrollWidth} > ${el.clientWidth})`)
    }
  }
  return [...new Set(problems)]
}
