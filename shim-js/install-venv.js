// Detached installer for the sidecar venv (started by python-env.js; outlives DSH). Appends its progress to
// <venv parent>/install.log. Argument: one JSON object {base, baseExecutable, venv, packageRoot, wanted}.

import { appendFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { installVenv } from './python-env.js'

const options = JSON.parse(process.argv[2] ?? '{}')
const logFile = join(dirname(options.venv), 'install.log')
const log = (line) => {
  try {
    appendFileSync(logFile, `${new Date().toISOString()} [${process.pid}] ${line}\n`)
  } catch {}
}
const result = await installVenv({ ...options, log })
process.exitCode = result.ok ? 0 : 1
