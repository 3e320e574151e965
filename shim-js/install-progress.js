// The progress of the sidecar's venv install, read from the install log plugin/bootstrap_venv.py writes
// (`<stratagate home>/install.log`, lines `<ISO time> [<pid>] <text>`, appended by every install). Its `step: <name>`
// markers become the steps the status route shows while DSH waits; `FAILED: <why>` is the failure.

import { closeSync, fstatSync, openSync, readSync } from 'node:fs'

/** How much of the end of the log is read (pip output makes it long; one install fits well within this). */
const TAIL_BYTES = 512 * 1024
const LINE = /^(\d{4}-\d\d-\d\dT[\d:.]+Z) \[(\d+)\] (.*)$/

/** The last `TAIL_BYTES` of a file as text ('' when it cannot be read). */
function readTail(path) {
  let fd
  try {
    fd = openSync(path, 'r')
    const size = fstatSync(fd).size
    const length = Math.min(size, TAIL_BYTES)
    const buffer = Buffer.alloc(length)
    readSync(fd, buffer, 0, length, size - length)
    const text = buffer.toString('utf8')
    return size > length ? text.slice(text.indexOf('\n') + 1) : text // drop the partial first line
  } catch {
    return ''
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** A log line shown in the browser: credentials in index URLs (pip prints them in some errors) masked. */
export function maskLine(text) {
  return text.replace(/(\/\/[^/\s:@]+):[^@\s/]+@/g, '$1:****@')
}

/**
 * What the install of this start did so far.
 * @param {object} o
 * @param {string} o.log - the install log file.
 * @param {number} o.since - epoch ms: earlier lines belong to earlier installs.
 * @param {Iterable<number>} [o.pids] - the installer pids of this install (ours, or the one holding the lock).
 * @param {number} [o.now]
 * @param {number} [o.tailLines] - how many of the last log lines to return.
 * @returns {{state: 'installing'|'done'|'failed', steps: {name: string, started_at: string, done_at: string|null}[],
 *   elapsed_s: number, log_tail: string[], error: string|null}}
 */
export function readInstallProgress({ log, since, pids = [], now = Date.now(), tailLines = 12 }) {
  const wanted = new Set([...pids].filter((p) => Number.isInteger(p) && p > 0))
  const lines = []
  for (const raw of readTail(log).split('\n')) {
    const m = LINE.exec(raw)
    if (!m) continue
    const at = Date.parse(m[1])
    if (!(at >= since) || (wanted.size && !wanted.has(Number(m[2])))) continue
    lines.push({ at, iso: m[1], text: m[3] })
  }
  const steps = []
  let error = null
  let endedAt = null
  for (const line of lines) {
    const open = steps.at(-1)
    if (line.text.startsWith('step: ')) {
      if (open && open.done_at === null) open.done_at = line.iso
      steps.push({ name: line.text.slice(6), started_at: line.iso, done_at: null })
    } else if (line.text.startsWith('FAILED: ')) {
      error = maskLine(line.text.slice(8))
      endedAt = line.at
    } else if (/^installed stratagate /.test(line.text)) {
      if (open && open.done_at === null) open.done_at = line.iso
      endedAt = line.at
    }
  }
  const startedAt = lines.length ? lines[0].at : since
  const state = error ? 'failed' : endedAt !== null ? 'done' : 'installing'
  return {
    state,
    steps,
    elapsed_s: Math.max(0, Math.round(((endedAt ?? now) - startedAt) / 100) / 10),
    log_tail: lines.slice(-tailLines).map((l) => maskLine(l.text.replace(/^ {2}/, ''))),
    error,
  }
}

/**
 * What the terminal shows of a first-start install (DSH's own log is buffered, so a user running `dsh web` would
 * otherwise wait minutes in silence): a line when it starts, one per new step, a "still installing" line when
 * `everyMs` passed without one, and the end (done in N s, or the failure).
 */
export class InstallReporter {
  /**
   * @param {object} o
   * @param {(line: string) => void} o.write - one line, without the newline.
   * @param {string} o.venv - where the sidecar goes.
   * @param {string} o.log - the install log.
   * @param {number} [o.everyMs] - the longest silence while installing.
   */
  constructor({ write, venv, log, everyMs = 10_000 }) {
    this.write = (text) => write(`StrataGate: ${text}`)
    this.venv = venv
    this.log = log
    this.everyMs = everyMs
    this.started = false
    this.stepsShown = 0
    this.lastAt = 0
    this.ended = false
  }

  /** Report what changed since the last call; `progress` is readInstallProgress()'s answer. */
  update(progress, now = Date.now()) {
    if (this.ended) return
    if (!this.started) {
      this.started = true
      this.lastAt = now
      this.write(`installing the Python sidecar into ${this.venv} (first start only, a few minutes; log: ${this.log})`)
    }
    for (const step of progress.steps.slice(this.stepsShown)) {
      this.write(`  ${step.name} (${progress.elapsed_s} s)`)
      this.lastAt = now
    }
    this.stepsShown = Math.max(this.stepsShown, progress.steps.length)
    if (now - this.lastAt >= this.everyMs) {
      // With what pip is doing right now (its last log line, already masked), cut to one terminal line.
      const last = progress.log_tail.at(-1)
      const doing = last ? `: ${last.length > 100 ? `${last.slice(0, 99)}…` : last}` : ''
      this.write(`  still installing (${progress.elapsed_s} s)${doing}`)
      this.lastAt = now
    }
  }

  /** The end: `error` null when the sidecar is installed. Says nothing when no install was reported. */
  finish(error, elapsedS) {
    if (!this.started || this.ended) return
    this.ended = true
    if (error) this.write(`the sidecar install failed after ${elapsedS} s: ${maskLine(error)} (log: ${this.log})`)
    else this.write(`sidecar installed in ${elapsedS} s; memory is starting`)
  }
}

/** Lines for the terminal DSH runs in: its stderr (DSH prints its own messages there too). */
export function terminalWriter(stream = process.stderr) {
  return (line) => {
    try {
      stream.write(`${line}\n`)
    } catch {}
  }
}
