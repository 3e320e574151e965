// Choose the CompactionEngine class for the `stratagate-compaction` row: StrataGate's engine when its module loads,
// else DSH's stock BasicCompactionEngine (so a broken or unresolvable engine never leaves DSH without compaction).
// Pure apart from the two importers it is given; tests/js/context.test.mjs drives it with fakes.

import { importDsh } from './dsh-import.js'

/** Import DSH's stock engine: from this package's resolution (tarball/npm install), else from DSH's own install. */
export const importStock = () => importDsh('@deepseek-ai/dsh-compaction-basic')

/**
 * @param {() => Promise<{StrataGateCompactionEngine: Function}>} importEngine
 * @param {() => Promise<{BasicCompactionEngine: Function}>} [importBasic]
 * @returns {Promise<Function>} the engine class (a Cordis service plugin)
 */
export async function loadEngine(importEngine, importBasic = importStock) {
  let failure
  try {
    const Engine = (await importEngine()).StrataGateCompactionEngine
    if (typeof Engine === 'function') return Engine
    failure = new Error('the module has no StrataGateCompactionEngine export')
  } catch (error) {
    failure = error
  }
  const { BasicCompactionEngine } = await importBasic()
  const reason = failure?.message ?? String(failure)
  return class StockCompactionEngine extends BasicCompactionEngine {
    static stratagateLoadError = reason
    constructor(ctx, config) {
      super(ctx, config)
      ctx?.logger?.warn?.(`StrataGate's compaction engine could not be loaded (${reason}); DSH's stock compaction runs instead`)
    }
  }
}
