// Browser half of stratagate-py: a "StrataGate Memory" settings section showing GET /api/stratagate/status.
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
    }
    return module.exports
  },
})
