// Import a DSH package at run time. From a tarball/npm install the package resolves from the profile (DSH heals
// `$DSH_HOME/profiles/node_modules` at every launch); from a `link:` checkout it does not (CONTRACT Gotcha 1), so
// the second try resolves it from DSH's own installation: its entry script depends on
// @deepseek-ai/dsh-compaction-basic directly, and that package on the rest of the compaction seam.

import { realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

const ANCHOR = '@deepseek-ai/dsh-compaction-basic'

/** `import(name)`, else the same package as DSH's own installation resolves it. */
export async function importDsh(name, { entry = process.argv[1], load = (specifier) => import(specifier) } = {}) {
  try {
    return await load(name)
  } catch (error) {
    if (!entry) throw error
    try {
      const anchor = realpathSync(createRequire(realpathSync(entry)).resolve(ANCHOR))
      const path = name === ANCHOR ? anchor : createRequire(anchor).resolve(name)
      return await load(pathToFileURL(path).href)
    } catch {
      throw error
    }
  }
}
