// Choose the CompactionEngine class for the `stratagate-compaction` row: StrataGate's engine when its module loads,
// else DSH's stock BasicCompactionEngine (so a broken or unresolvable engine never leaves DSH without compaction).
// Pure apart from the two importers it is given; tests/js/context.test.mjs drives it with fakes.

import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

/** Import DSH's stock engine: from this package's resolution (tarball/npm install), else from DSH's own install. */
export async function importStock() {
  try {
    return await import('@deepseek-ai/dsh-compaction-basic')
  } catch (error) {
    // A `link:` install resolves from the checkout, which has no DSH packages; DSH's entry script can.
    if (!process.argv[1]) throw error
    const require = createRequire(process.argv[1])
    return import(pathToFileURL(require.resolve('@deepseek-ai/dsh-compaction-basic')).href)
  }
}

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
