// Browser half of stratagate-py: a "StrataGate Memory" settings section showing GET /api/stratagate/status with a
// small "Context" form (GET/POST /api/stratagate/context/settings), and a glyph in the composer dock
// (`conversation.composer.dock`, session-scoped) showing the session's context use and the last change
// (GET /api/stratagate/context/status?session=…). Labels of changes come from the sidecar (`last_change.label`).
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

    const STATES = {
      ready: ['Ready', '#1a7f37'],
      starting: ['Starting', '#9a6700'],
      installing: ['Installing the Python sidecar (first start only)', '#9a6700'],
      restarting: ['Restarting', '#9a6700'],
      failed: ['Failed', '#cf222e'],
      unavailable: ['Unavailable', '#cf222e'],
    }

    function Row(props) {
      return h(
        'tr',
        null,
        h('td', { style: { padding: '4px 16px 4px 0', opacity: 0.7, verticalAlign: 'top', whiteSpace: 'nowrap' } }, props.label),
        h('td', { style: { padding: '4px 0', fontFamily: 'monospace', wordBreak: 'break-all' } }, props.children),
      )
    }

    function StrataGatePage() {
      const [status, setStatus] = React.useState(null)
      const [error, setError] = React.useState(null)
      const load = React.useCallback(() => {
        fetch('/api/stratagate/status', { headers: { Accept: 'application/json' } })
          .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`HTTP ${r.status}`))))
          .then((s) => {
            setStatus(s)
            setError(null)
          }, (e) => setError(String(e && e.message ? e.message : e)))
      }, [])
      React.useEffect(() => {
        load()
        const timer = setInterval(load, 5000)
        return () => clearInterval(timer)
      }, [load])
      const state = status ? STATES[status.state] || [status.state, 'inherit'] : ['Loading…', 'inherit']
      const q = (status && status.queue) || {}
      const c = (status && status.counts) || null
      return h(
        'div',
        { style: { padding: 16, maxWidth: 860 } },
        h('h2', { style: { marginTop: 0 } }, 'StrataGate Memory'),
        h(
          'p',
          { style: { opacity: 0.75 } },
          'Long-term memory for DSH: every completed turn is stored by a local Python sidecar, sealed into blocks, summarised in the background and recalled at each step.',
        ),
        error ? h('p', { style: { color: '#cf222e' } }, `Could not load the status: ${error}`) : null,
        h(
          'table',
          { style: { borderCollapse: 'collapse' } },
          h(
            'tbody',
            null,
            h(Row, { label: 'State' }, h('span', { style: { color: state[1], fontWeight: 600 } }, state[0]), status && status.detail ? ` — ${status.detail}` : ''),
            status && status.last_error ? h(Row, { label: 'Last error' }, h('span', { style: { color: '#cf222e' } }, status.last_error)) : null,
            status && status.hint ? h(Row, { label: 'What to do' }, status.hint) : null,
            status ? h(Row, { label: 'Version' }, `shim ${status.version.shim} · sidecar ${status.version.sidecar || '—'}`) : null,
            status ? h(Row, { label: 'Python' }, status.python ? `${status.python.command} (${status.python.version}, ${status.python.source})` : '—') : null,
            status && status.venv ? h(Row, { label: 'Venv' }, status.venv) : null,
            status ? h(Row, { label: 'Database' }, status.db_path || '—') : null,
            status ? h(Row, { label: 'Namespaces' }, status.namespace_mode) : null,
            status ? h(Row, { label: 'Queue' }, `${q.depth || 0} (spooled turns ${q.spooled_turns || 0}, jobs queued ${q.jobs_queued || 0}, running ${q.jobs_running || 0}, failed ${q.jobs_failed || 0})`) : null,
            c ? h(Row, { label: 'Stored' }, `${c.turns} turns · ${c.messages} messages · ${c.blocks.ready} ready / ${c.blocks.pending} pending blocks · ${c.sessions} sessions · ${c.namespaces} namespaces`) : null,
            status ? h(Row, { label: 'Model route' }, status.model_route || '—') : null,
            status ? h(Row, { label: 'Restarts' }, String(status.restarts)) : null,
          ),
        ),
        h('button', { type: 'button', onClick: load, style: { marginTop: 12 } }, 'Refresh'),
        h('h3', { style: { marginTop: 24 } }, 'Context'),
        h(
          'p',
          { style: { opacity: 0.75 } },
          'How StrataGate manages the conversation history: cost mode lands changes at turn end when the saving outweighs the cache miss; quality mode also relieves long turns before each step.',
        ),
        h('table', { style: { borderCollapse: 'collapse' } }, h('tbody', null, h(ContextForm, null))),
      )
    }

    const getJson = (url, init) =>
      fetch(url, Object.assign({ headers: { Accept: 'application/json', 'Content-Type': 'application/json' } }, init)).then((r) =>
        r.json().then((body) => (r.ok ? body : Promise.reject(new Error(body && body.error ? body.error : `HTTP ${r.status}`)))),
      )

    /** "Context 41% · Fold T1 −23.3K": the sidecar's dock text when it sends one, else use/window and its last label. */
    function dockText(status) {
      if (!status) return null
      if (typeof status.dock === 'string' && status.dock) return status.dock
      const parts = []
      if (status.window) parts.push(`Context ${Math.round((100 * (status.used_tokens || 0)) / status.window)}%`)
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

    const MODES = ['cost', 'quality', 'custom']
    const FLAG_LABELS = { auto_fold: 'Automatic folds', reminders: 'Reminders', enabled: 'Context engine on', cost_aware: 'Cost-aware landing', mid_turn_cards: 'Cards before each step' }

    function ContextForm() {
      const [settings, setSettings] = React.useState(null)
      const [message, setMessage] = React.useState(null)
      React.useEffect(() => {
        getJson('/api/stratagate/context/settings').then((r) => setSettings(r && r.settings ? r.settings : r), (e) => setMessage(String(e.message || e)))
      }, [])
      const save = (patch) =>
        getJson('/api/stratagate/context/settings', { method: 'POST', body: JSON.stringify({ settings: patch }) }).then(
          (r) => {
            setSettings(r && r.settings ? r.settings : r)
            setMessage('Saved; applies from the next turn.')
          },
          (e) => setMessage(String(e.message || e)),
        )
      if (!settings) return h('tr', null, h('td', { colSpan: 2, style: { opacity: 0.7 } }, message || 'Loading the context settings…'))
      const numbers = Object.keys(settings).filter((k) => typeof settings[k] === 'number')
      const flags = ['auto_fold', 'reminders', ...Object.keys(settings).filter((k) => typeof settings[k] === 'boolean' && k !== 'auto_fold' && k !== 'reminders')].filter((k) => k in settings)
      return h(
        React.Fragment,
        null,
        h(
          Row,
          { label: 'Mode' },
          h('select', { value: settings.mode, onChange: (e) => save({ mode: e.target.value }) }, MODES.map((m) => h('option', { key: m, value: m }, m))),
        ),
        flags.map((k) =>
          h(Row, { key: k, label: FLAG_LABELS[k] || k }, h('input', { type: 'checkbox', checked: Boolean(settings[k]), onChange: (e) => save({ [k]: e.target.checked }) })),
        ),
        numbers.map((k) =>
          h(
            Row,
            { key: k, label: k },
            h('input', {
              type: 'number',
              step: 'any',
              defaultValue: settings[k],
              style: { width: 110 },
              onBlur: (e) => {
                const value = Number(e.target.value)
                // The sidecar reads an explicit threshold as mode 'custom' (unless it equals a preset's).
                if (e.target.value !== '' && Number.isFinite(value) && value !== settings[k]) save({ [k]: value })
              },
            }),
          ),
        ),
        message ? h('tr', null, h('td', { colSpan: 2, style: { opacity: 0.75 } }, message)) : null,
      )
    }

    exports.name = 'stratagate-py'
    exports.inject = ['slots']
    exports.apply = (ctx) => {
      const slots = ctx.get('slots')
      if (!slots) return
      slots.inject('settings.section', () =>
        slots.register({ name: 'settings.section', id: 'stratagate', order: 90, label: () => 'StrataGate Memory' }, () => h(StrataGatePage, null)),
      )
      slots.inject('conversation.composer.dock', () =>
        slots.register({ name: 'conversation.composer.dock', id: 'stratagate-context', order: 50, inject: (sessionId) => ({ sessionId }) }, ContextDock),
      )
    }
    return module.exports
  },
})
