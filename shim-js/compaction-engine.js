// StrataGate's CompactionEngine (`ctx.compaction`): DSH's BasicCompactionEngine with the context engine asked first
// (behaviour: compaction-engine-class.js). Loaded through shim-js/compaction.js, which falls back to the stock engine
// if this file cannot load (e.g. the DSH packages below do not resolve).

import { ManualCompactionError } from '@deepseek-ai/dsh-compaction'
import { BasicCompactionEngine } from '@deepseek-ai/dsh-compaction-basic'
import { makeEngineClass } from './compaction-engine-class.js'

export const StrataGateCompactionEngine = makeEngineClass(BasicCompactionEngine, ManualCompactionError)

export default StrataGateCompactionEngine
