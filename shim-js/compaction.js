// The `stratagate-compaction` Cordis row (package export `stratagate-py/compaction`, plugin/cordis.patch.yml): a
// tiny loader. It must not import DSH packages itself, or a failure to resolve them would leave the session with no
// compaction at all: it tries StrataGate's engine and falls back to DSH's stock BasicCompactionEngine.

import { loadEngine } from './compaction-loader.js'

export default await loadEngine(() => import('./compaction-engine.js'))
