// Durable outbox for captured turns: nothing is lost between `turn/end` and the sidecar's acknowledgement.
//
// Each shim instance owns one append-only JSONL file `spool-<pid>-<start>.jsonl` in the spool folder (0700; files
// 0600). A folded turn is appended (and fsynced) as `{"k":"turn","id":…,"rec":…}` BEFORE it is sent; the
// acknowledgement appends `{"k":"ack","id":…}`. When nothing is pending the file is truncated. A line that does
// not parse (a partial last line after a crash) is ignored; the next append first terminates it with "\n".
// On open, files of instances that are no longer running are adopted in order (their pending records are copied
// into this instance's file, then the old file is removed), so a crash loses nothing; re-sending is safe because
// `turn.capture` is idempotent per receipt.

import {
  closeSync,
  chmodSync,
  existsSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'

const FILE_RE = /^spool-(\d+)-(\d+)(?:-([0-9a-f]+))?\.jsonl$/

// Spool files open in this process, shared across module instances (a plugin reload re-imports this module):
// a file of this very process that no instance holds open any more is adopted like a dead process's file.
const OPEN = (globalThis[Symbol.for('stratagate-py.spool.open')] ??= new Set())

/** Parse a spool file's text: pending records in append order (acked or dropped ones removed). Pure. */
export function parseSpool(text) {
  const pending = new Map()
  let bad = 0
  for (const line of text.split('\n')) {
    if (!line.trim()) continue
    let entry
    try {
      entry = JSON.parse(line)
    } catch {
      bad++
      continue
    }
    if (!entry || typeof entry !== 'object' || typeof entry.id !== 'string') {
      bad++
      continue
    }
    if (entry.k === 'turn') {
      pending.delete(entry.id) // re-appended: move to the end
      pending.set(entry.id, entry.rec)
    } else if (entry.k === 'ack' || entry.k === 'drop') {
      pending.delete(entry.id)
    }
  }
  return { pending: [...pending.entries()].map(([id, rec]) => ({ id, rec })), bad }
}

function processAlive(pid) {
  if (!Number.isInteger(pid) || pid <= 0) return false
  if (pid === process.pid) return false // files of this process: liveness is decided by OPEN
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return error?.code === 'EPERM'
  }
}

export class Spool {
  /**
   * @param {string|null} dir - spool folder (created 0700); null keeps records in memory only.
   * @param {object} [options]
   * @param {(pid: number) => boolean} [options.isAlive] - whether another instance's pid is still running.
   * @param {boolean} [options.fsync] - fsync after every append (default true).
   */
  constructor(dir, options = {}) {
    this.dir = dir
    this.isAlive = options.isAlive ?? processAlive
    this.fsync = options.fsync ?? true
    this.fd = null
    this.file = null
    /** @type {Map<string, object>} */
    this.pendingMap = new Map()
    this.badLines = 0
  }

  /** Create the folder and this instance's file; adopt the pending records of dead instances. */
  open() {
    if (this.dir === null) return { adopted: 0, badLines: 0 } // memory-only fallback (the folder was not writable)
    mkdirSync(this.dir, { recursive: true, mode: 0o700 })
    try {
      chmodSync(this.dir, 0o700)
    } catch {}
    const name = `spool-${process.pid}-${Date.now()}-${randomBytes(4).toString('hex')}.jsonl`
    this.file = join(this.dir, name)
    OPEN.add(this.file)
    this.fd = openSync(this.file, 'a+', 0o600)
    try {
      chmodSync(this.file, 0o600)
    } catch {}
    const adopted = []
    const others = readdirSync(this.dir)
      .map((f) => ({ f, m: FILE_RE.exec(f) }))
      .filter(({ f, m }) => m && f !== name)
      .sort((a, b) => Number(a.m[2]) - Number(b.m[2]) || Number(a.m[1]) - Number(b.m[1]))
    for (const { f, m } of others) {
      const pid = Number(m[1])
      const path = join(this.dir, f)
      if (OPEN.has(path) || this.isAlive(pid)) continue
      let text
      try {
        text = readFileSync(path, 'utf8')
      } catch {
        continue
      }
      const { pending, bad } = parseSpool(text)
      this.badLines += bad
      for (const { id, rec } of pending) {
        if (this.pendingMap.has(id)) this.pendingMap.delete(id)
        this.write({ k: 'turn', id, rec })
        this.pendingMap.set(id, rec)
        adopted.push(id)
      }
      try {
        unlinkSync(path)
      } catch {}
    }
    return { adopted: adopted.length, badLines: this.badLines }
  }

  /** Pending (not yet acknowledged) records, oldest first. */
  pending() {
    return [...this.pendingMap.entries()].map(([id, rec]) => ({ id, rec }))
  }

  get depth() {
    return this.pendingMap.size
  }

  /** Append a record durably (before it is sent). Re-appending a pending id moves it to the end. */
  append(id, rec) {
    this.write({ k: 'turn', id, rec })
    this.pendingMap.delete(id)
    this.pendingMap.set(id, rec)
  }

  /** The sidecar stored it (or already had it): forget it. */
  ack(id) {
    if (!this.pendingMap.has(id)) return
    this.pendingMap.delete(id)
    this.write({ k: 'ack', id })
    this.compact()
  }

  /** Give up on a record the sidecar will never accept; it is kept in `rejected.jsonl` next to the spool. */
  drop(id, reason) {
    const rec = this.pendingMap.get(id)
    if (rec === undefined) return
    if (this.dir === null) {
      this.pendingMap.delete(id)
      return
    }
    const rejected = openSync(join(this.dir, 'rejected.jsonl'), 'a', 0o600)
    try {
      writeSync(rejected, JSON.stringify({ id, reason: String(reason), at: new Date().toISOString(), rec }) + '\n')
    } finally {
      closeSync(rejected)
    }
    this.pendingMap.delete(id)
    this.write({ k: 'drop', id })
    this.compact()
  }

  /** Tests only: behave as if this instance's process had died (its file becomes adoptable). */
  forgetOpen() {
    OPEN.delete(this.file)
  }

  /** Remove this instance's file when nothing is pending; otherwise keep it for the next start. */
  close() {
    if (this.fd === null) return
    const empty = this.pendingMap.size === 0
    closeSync(this.fd)
    this.fd = null
    OPEN.delete(this.file)
    if (empty) {
      try {
        unlinkSync(this.file)
      } catch {}
    }
  }

  compact() {
    if (this.pendingMap.size === 0 && this.fd !== null) {
      ftruncateSync(this.fd, 0)
      if (this.fsync) fsyncSync(this.fd)
    }
  }

  write(entry) {
    if (this.dir === null) return
    if (this.fd === null) throw new Error('spool is not open')
    const size = fstatSync(this.fd).size
    let prefix = ''
    if (size > 0) {
      // A crash may have left a partial last line: terminate it so this record starts on its own line.
      const last = Buffer.alloc(1)
      readSync(this.fd, last, 0, 1, size - 1)
      if (last[0] !== 0x0a) prefix = '\n'
    }
    writeSync(this.fd, prefix + JSON.stringify(entry) + '\n')
    if (this.fsync) fsyncSync(this.fd)
  }
}

/** Spool files present in a folder (for status and tests). */
export function spoolFiles(dir) {
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((f) => FILE_RE.test(f))
    .map((f) => ({ file: join(dir, f), size: statSync(join(dir, f)).size }))
}
