// Which DSH runs this plugin: the versions of its `@deepseek-ai/dsh` package and of the Cordis framework it loaded,
// read from their package.json files next to the `dsh` script that started this process. The sidecar decides
// whether they are supported (sidecar/stratagate/dsh/host.py, `host.check`); this file only reads.

import { readFileSync, realpathSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'

const DSH = '@deepseek-ai/dsh'
const CORDIS = join('@deepseek-ai', 'cordis', 'package.json')

function manifest(path) {
  try {
    return JSON.parse(readFileSync(path, 'utf8'))
  } catch {
    return null
  }
}

function* parents(dir) {
  for (let d = dir; ; d = dirname(d)) {
    yield d
    if (dirname(d) === d) return
  }
}

/** The folder of the `@deepseek-ai/dsh` package that holds `script` (the process's main script), or null. */
export function dshPackageDir(script) {
  let real
  try {
    real = realpathSync(script)
  } catch {
    return null
  }
  for (const dir of parents(dirname(real))) if (manifest(join(dir, 'package.json'))?.name === DSH) return dir
  return null
}

/** The Cordis version DSH resolves: the nearest `node_modules/@deepseek-ai/cordis` above its package (pnpm's or npm's). */
export function cordisVersion(dshDir) {
  for (const dir of parents(dshDir)) {
    const found = manifest(basename(dir) === 'node_modules' ? join(dir, CORDIS) : join(dir, 'node_modules', CORDIS))
    if (found?.version) return found.version
  }
  return null
}

/**
 * {dsh, cordis}: their versions, 'unknown' where unreadable (e.g. a DSH started some other way).
 * @param {string|undefined} [script] - the main script (default: process.argv[1]).
 */
export function readHostVersions(script = process.argv[1]) {
  const dir = script ? dshPackageDir(script) : null
  if (!dir) return { dsh: 'unknown', cordis: 'unknown' }
  return { dsh: manifest(join(dir, 'package.json'))?.version ?? 'unknown', cordis: cordisVersion(dir) ?? 'unknown' }
}
