// Browser half of stratagate-py: the "StrataGate Memory" settings section (nav label "Memory"), which mounts the
// Memory page (memory-page.js from /api/stratagate/memory/assets/, the same code `stratagate ui` serves) once the
// sidecar is ready and, while it installs, starts or failed, shows GET /api/stratagate/status: the install's steps,
// elapsed time and log tail, its error and a Retry (POST /api/stratagate/install/retry). The context engine's settings
// are in the page's own Settings tab (once, with the rest). And a glyph in the composer dock
// (`conversation.composer.dock`, session-scoped) showing the last change StrataGate made to the session's context
// (GET /api/stratagate/context/status?session=…), and its use only where DSH shows no context gauge of its own.
// Labels of changes come from the sidecar (`last_change.label`).
// Hand-written in the lazy-CJS factory shape DSH's client module loader expects (DSH's client build preset is not
// published): window.__ModuleLoader__.load({id, factory(require)}) exporting name, inject and apply.
/* global window, fetch */
window.__ModuleLoader__.load({
  id: 'stratagate-py',
  factory: (require) => {
    const module = { exports: {} }
    const exports = module.exports
    Object.defineProperty(exports, Symbol.toStringTag, { value: 'Module' })
    const React = require('react')
    const h = React.createElement

    // The section's own words in the browser's language (the Memory page has its own dictionary).
    const tr = (en, zhText) => (zh() ? zhText : en)
    const STATES = {
      ready: [() => tr('Ready', '就绪'), '#1a7f37'],
      starting: [() => tr('Starting', '启动中'), '#9a6700'],
      installing: [() => tr('Installing the Python sidecar (first start only)', '正在安装 Python 边车进程（仅首次启动）'), '#9a6700'],
      restarting: [() => tr('Restarting', '重启中'), '#9a6700'],
      failed: [() => tr('Failed', '失败'), '#cf222e'],
      unavailable: [() => tr('Unavailable', '不可用'), '#cf222e'],
    }

    function Row(props) {
      return h(
        'tr',
        null,
        h('td', { style: { padding: '4px 16px 4px 0', opacity: 0.7, verticalAlign: 'top', whiteSpace: 'nowrap' } }, props.label),
        // Paths and versions: broken only where they would overflow (never 'break-all', which splits every word).
        h('td', { style: { padding: '4px 0', fontFamily: 'monospace', overflowWrap: 'anywhere' } }, props.children),
      )
    }

    const MEMORY_API = '/api/stratagate/memory'
    const zh = () => {
      try {
        return /^zh/i.test((window.document && window.document.documentElement && window.document.documentElement.lang) || (window.navigator && window.navigator.language) || '')
      } catch (e) {
        return false
      }
    }
    // DSH's settings nav leaves ~112 px for a label (188 px nav, 14 px text, ellipsis): "StrataGate Memory" would be
    // cut, so the nav says "Memory" and the section opens with the whole name.
    // The nav glyph: DSH picks it by section id and gives unknown ids General's gear, so the label carries our own
    // (stacked layers) and a rule of ours hides the gear of the entry holding it.
    const NAV_CSS = '[role="dialog"] nav button:has([data-stratagate-nav]) > svg { display: none }'
    function navStyle() {
      const doc = window.document
      if (!doc || !doc.head || typeof doc.querySelector !== 'function' || doc.querySelector('style[data-stratagate-nav]')) return
      const tag = doc.createElement('style')
      tag.setAttribute('data-stratagate-nav', '')
      tag.textContent = NAV_CSS
      doc.head.appendChild(tag)
    }
    const svg = (tag, props, ...children) => h(tag, props, ...children)
    function MemoryIcon() {
      return svg(
        'svg',
        { width: 16, height: 16, viewBox: '0 0 16 16', fill: 'none', stroke: 'currentColor', strokeWidth: 1.3, strokeLinejoin: 'round', strokeLinecap: 'round', 'aria-hidden': 'true', style: { flex: 'none' } },
        svg('path', { d: 'M8 2.5 14 5.5 8 8.5 2 5.5Z' }),
        svg('path', { d: 'M2 8.3 8 11.3 14 8.3' }),
        svg('path', { d: 'M2 11 8 14 14 11' }),
      )
    }
    const navLabel = () =>
      h('span', { 'data-stratagate-nav': '', style: { display: 'inline-flex', alignItems: 'center', gap: 8, maxWidth: '100%' } }, h(MemoryIcon), zh() ? '记忆' : 'Memory')

    /** Load memory-page.js once (a <script> tag; the same file the standalone `stratagate ui` serves). */
    let pageScript = null
    function loadMemoryPage() {
      if (window.StrataGateMemoryPage) return Promise.resolve(window.StrataGateMemoryPage)
      if (!pageScript) {
        pageScript = new Promise((resolve, reject) => {
          const doc = window.document
          const tag = doc.createElement('script')
          tag.src = `${MEMORY_API}/assets/memory-page.js`
          tag.async = true
          tag.setAttribute('data-stratagate', 'memory-page')
          tag.onload = () => (window.StrataGateMemoryPage ? resolve(window.StrataGateMemoryPage) : reject(new Error('memory-page.js defined no StrataGateMemoryPage')))
          tag.onerror = () => {
            pageScript = null // a later mount tries again
            tag.remove()
            reject(new Error(`could not load ${tag.src}`))
          }
          doc.head.appendChild(tag)
        })
      }
      return pageScript
    }

    /** The Memory page (memory-page.js) mounted into a div of ours; unmounted with the section. */
    function MemoryPage() {
      const box = React.useRef(null)
      const [problem, setProblem] = React.useState(null)
      React.useEffect(() => {
        let live = true
        let mounted = null
        loadMemoryPage().then(
          (page) => {
            if (live && box.current) mounted = page.mount(box.current, { api: MEMORY_API })
          },
          (e) => live && setProblem(String(e && e.message ? e.message : e)),
        )
        return () => {
          live = false
          if (mounted && mounted.unmount) mounted.unmount()
        }
      }, [])
      return h(
        'div',
        { 'data-stratagate-memory': '' },
        problem ? h('p', { role: 'alert', style: { color: '#cf222e' } }, `${tr('Could not load the Memory page', '无法加载记忆页面')}: ${problem}`) : null,
        h('div', { ref: box }),
      )
    }

    const SHOWN_STATES = ['ready', 'restarting'] // a restart is brief: the page stays and retries its requests

    function seconds(n) {
      const s = Math.max(0, Math.round(n))
      return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`
    }

    function stepTime(step, now) {
      const start = Date.parse(step.started_at)
      const end = step.done_at ? Date.parse(step.done_at) : now
      return Number.isFinite(start) && Number.isFinite(end) ? seconds((end - start) / 1000) : ''
    }

    /** While the sidecar installs, starts or failed: the install's steps and elapsed time, its error and Retry. */
    function InstallStatus(props) {
      const { status, fetchedAt, onRetry, retrying, retryMessage } = props
      const install = status.install || null
      const state = STATES[status.state] ? [STATES[status.state][0](), STATES[status.state][1]] : [status.state, 'inherit']
      const failed = status.state === 'failed' || status.state === 'unavailable'
      const running = install && install.state === 'installing' && !failed
      const now = Date.now()
      const elapsed = install ? install.elapsed_s + (running ? Math.max(0, (now - fetchedAt) / 1000) : 0) : null
      const error = (install && install.error) || status.last_error
      const q = status.queue || {}
      return h(
        'div',
        { 'data-testid': 'install-progress', role: 'status', 'aria-live': 'polite' },
        h('p', null, h('span', { style: { color: state[1], fontWeight: 600 } }, state[0]), status.detail ? ` — ${status.detail}` : ''),
        install
          ? h(
              'div',
              null,
              h('p', null, `${running ? tr('Elapsed', '已用时') : tr('Took', '共用时')} ${seconds(elapsed)}`),
              h(
                'ol',
                { style: { paddingLeft: 20 } },
                install.steps.map((step, i) =>
                  h(
                    'li',
                    { key: i, 'data-step': step.name },
                    step.name,
                    ' — ',
                    step.done_at ? `${tr('done in', '完成，用时')} ${stepTime(step, now)}` : failed ? tr('failed', '失败') : `${tr('running for', '已运行')} ${stepTime(step, running ? now : Date.parse(step.started_at))}`,
                  ),
                ),
              ),
              install.log_tail && install.log_tail.length
                ? h('pre', { style: { whiteSpace: 'pre-wrap', overflowWrap: 'anywhere', fontSize: 12, opacity: 0.8, maxHeight: 200, overflow: 'auto' } }, install.log_tail.join('\n'))
                : null,
              install.log ? h('p', { style: { opacity: 0.7 } }, tr('Install log: ', '安装日志：'), h('code', { style: { overflowWrap: 'anywhere' } }, install.log)) : null,
            )
          : null,
        failed && error ? h('p', { role: 'alert', style: { color: '#cf222e' } }, error) : null,
        failed && status.hint ? h('p', null, status.hint) : null,
        failed ? h('button', { type: 'button', onClick: onRetry, disabled: retrying, 'data-testid': 'install-retry' }, retrying ? tr('Retrying…', '重试中…') : tr('Retry', '重试')) : null,
        retryMessage ? h('p', null, retryMessage) : null,
        h(
          'table',
          { style: { borderCollapse: 'collapse', marginTop: 12 } },
          h(
            'tbody',
            null,
            h(Row, { label: tr('Version', '版本') }, `shim ${(status.version && status.version.shim) || '—'} · sidecar ${(status.version && status.version.sidecar) || '—'}`),
            h(Row, { label: 'Python' }, status.python ? `${status.python.command} (${status.python.version}, ${status.python.source})` : '—'),
            status.venv ? h(Row, { label: tr('Venv', '虚拟环境') }, status.venv) : null,
            h(Row, { label: tr('Database', '数据库') }, status.db_path || '—'),
            h(Row, { label: tr('Queue', '队列') }, `${q.depth || 0} (${tr('spooled turns', '暂存的轮次')} ${q.spooled_turns || 0})`),
            h(Row, { label: tr('Restarts', '重启次数') }, String(status.restarts || 0)),
          ),
        ),
      )
    }

    function StrataGatePage() {
      const [status, setStatus] = React.useState(null)
      const [error, setError] = React.useState(null)
      const [fetchedAt, setFetchedAt] = React.useState(0)
      const [retry, setRetry] = React.useState({ busy: false, message: null })
      const [, setTick] = React.useState(0)
      const ready = Boolean(status && SHOWN_STATES.includes(status.state))
      const load = React.useCallback(() => {
        fetch('/api/stratagate/status', { headers: { Accept: 'application/json' } })
          .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`HTTP ${r.status}`))))
          .then((s) => {
            setStatus(s)
            setFetchedAt(Date.now())
            setError(null)
          }, (e) => setError(String(e && e.message ? e.message : e)))
      }, [])
      // The status is polled only to follow an install or a start (every 2 s) and to notice a failure later
      // (every 15 s); the Memory page has its own event-driven updates.
      React.useEffect(() => {
        load()
        const timer = setInterval(load, ready ? 15000 : 2000)
        const clock = ready ? null : setInterval(() => setTick((n) => n + 1), 1000)
        return () => {
          clearInterval(timer)
          if (clock) clearInterval(clock)
        }
      }, [load, ready])
      const onRetry = () => {
        setRetry({ busy: true, message: null })
        getJson('/api/stratagate/install/retry', { method: 'POST', body: '{}' }).then(
          (r) => {
            setRetry({ busy: false, message: r && r.retried ? tr('Trying again…', '正在重试…') : null })
            load()
          },
          (e) => setRetry({ busy: false, message: String(e && e.message ? e.message : e) }),
        )
      }
      return h(
        'div',
        { style: { padding: 16, wordBreak: 'normal', overflowWrap: 'normal' } },
        ready
          ? null
          : h('h2', { style: { marginTop: 0 } }, tr('StrataGate Memory', 'StrataGate 记忆')),
        error ? h('p', { role: 'alert', style: { color: '#cf222e' } }, `${tr('Could not load the status', '无法读取状态')}: ${error}`) : null,
        status === null && !error ? h('p', { style: { opacity: 0.7 } }, tr('Loading…', '加载中…')) : null,
        ready ? h(MemoryPage, null) : status ? h(InstallStatus, { status, fetchedAt, onRetry, retrying: retry.busy, retryMessage: retry.message }) : null,
      )
    }

    const getJson = (url, init) =>
      fetch(url, Object.assign({ headers: { Accept: 'application/json', 'Content-Type': 'application/json' } }, init)).then((r) =>
        r.json().then((body) => (r.ok ? body : Promise.reject(new Error(body && body.error ? body.error : `HTTP ${r.status}`)))),
      )

    /**
     * Whether DSH shows its own context gauge: its input bar's ContextMeter (dsh-client-ui-conversation) injects this
     * stylesheet when it loads. One gauge on screen: where DSH has one, ours shows only what StrataGate changed.
     */
    const dshGauge = () => Boolean(window.document) && window.document.querySelector('style[data-plugin-css$="/ContextMeter.module.css"]') !== null

    /** "Context 41% · Fold T1 −23.3K": the sidecar's dock text when it sends one, else use/window and its last label. */
    function dockText(status) {
      if (!status) return null
      if (typeof status.dock === 'string' && status.dock) return status.dock
      const parts = []
      if (status.window && !dshGauge()) parts.push(`Context ${Math.round((100 * (status.used_tokens || 0)) / status.window)}%`)
      if (status.last_change && status.last_change.label) parts.push(status.last_change.label)
      return parts.length ? parts.join(' · ') : null
    }

    function ContextDock(props) {
      const sessionId = props.sessionId
      const [status, setStatus] = React.useState(null)
      React.useEffect(() => {
        if (!sessionId) return undefined
        let live = true
        const load = () =>
          getJson(`/api/stratagate/context/status?session=${encodeURIComponent(sessionId)}`).then(
            (s) => live && setStatus(s),
            () => live && setStatus(null),
          )
        load()
        const timer = setInterval(load, 5000)
        return () => {
          live = false
          clearInterval(timer)
        }
      }, [sessionId])
      const text = dockText(status)
      if (!text) return null
      return h(
        'div',
        { title: status.decision || status.text || '', 'data-stratagate-context': '', style: { fontSize: 12, opacity: 0.7, padding: '0 12px', whiteSpace: 'nowrap', overflow: 'hidden', textOverflow: 'ellipsis' } },
        '◧ ',
        text,
      )
    }

    exports.name = 'stratagate-py'
    exports.inject = ['slots']
    exports.apply = (ctx) => {
      const slots = ctx.get('slots')
      if (!slots) return
      navStyle()
      slots.inject('settings.section', () =>
        slots.register({ name: 'settings.section', id: 'stratagate', order: 90, label: navLabel }, () => h(StrataGatePage, null)),
      )
      slots.inject('conversation.composer.dock', () =>
        slots.register({ name: 'conversation.composer.dock', id: 'stratagate-context', order: 50, inject: (sessionId) => ({ sessionId }) }, ContextDock),
      )
    }
    return module.exports
  },
})
