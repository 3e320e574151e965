import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { parseSpool, Spool } from '../../shim-js/spool.js'

const tmp = () => join(mkdtempSync(join(tmpdir(), 'sg-spool-')), 'spool')
const rec = (n) => ({ resolve: { mode: 'session', session: 's' }, params: { session: 's', receipt: `dsh:s:turn:${n}`, user: `turn ${n}` } })
const spoolFile = (dir) => readdirSync(dir).find((f) => f.startsWith('spool-'))

describe('spool', () => {
  it('appends before sending and forgets only on ack; private folder and file', () => {
    const dir = tmp()
    const spool = new Spool(dir)
    spool.open()
    spool.append('a', rec(1))
    spool.append('b', rec(2))
    assert.equal(spool.depth, 2)
    assert.equal((statSync(dir).mode & 0o777).toString(8), '700')
    const file = join(dir, spoolFile(dir))
    assert.equal((statSync(file).mode & 0o777).toString(8), '600')
    assert.deepEqual(parseSpool(readFileSync(file, 'utf8')).pending.map((p) => p.id), ['a', 'b'])
    spool.ack('a')
    assert.deepEqual(spool.pending().map((p) => p.id), ['b'])
    spool.ack('b')
    assert.equal(spool.depth, 0)
    assert.equal(statSync(file).size, 0, 'truncated once nothing is pending')
    spool.close()
    assert.equal(spoolFile(dir), undefined, 'an empty spool file is removed on close')
  })

  it('replays the pending turns of a dead instance in order, ignoring a partial last line', () => {
    const dir = tmp()
    const first = new Spool(dir, { isAlive: () => false })
    first.open()
    first.append('t1', rec(1))
    first.append('t2', rec(2))
    first.append('t3', rec(3))
    first.ack('t2')
    // Simulate a crash in the middle of writing the next record (no close, no newline).
    const file = join(dir, spoolFile(dir))
    writeFileSync(file, readFileSync(file, 'utf8') + '{"k":"turn","id":"t4","rec":{"params":{"rece', { flag: 'w' })
    first.fd = null // the crashed process never closes…
    first.forgetOpen() // …and its process is gone

    const second = new Spool(dir, { isAlive: () => false })
    const { adopted, badLines } = second.open()
    assert.equal(adopted, 2)
    assert.equal(badLines, 1)
    assert.deepEqual(second.pending().map((p) => p.id), ['t1', 't3'])
    assert.deepEqual(second.pending()[0].rec, rec(1))
    assert.equal(readdirSync(dir).filter((f) => f.startsWith('spool-')).length, 1, 'the dead file was adopted and removed')
    second.ack('t1')
    second.ack('t3')
    second.close()
  })

  it('leaves the spool of a live instance alone, and adopts it once that instance closed', () => {
    const dir = tmp()
    const a = new Spool(dir)
    a.open()
    a.append('x', rec(1))
    const b = new Spool(dir)
    assert.equal(b.open().adopted, 0, 'same process, still open')
    const other = new Spool(dir, { isAlive: () => true })
    assert.equal(other.open().adopted, 0, 'another live process')
    assert.equal(a.depth, 1)
    a.close() // e.g. a plugin reload that could not deliver everything before unloading
    const c = new Spool(dir)
    assert.equal(c.open().adopted, 1)
    assert.deepEqual(c.pending().map((p) => p.id), ['x'])
  })

  it('terminates a partial line before appending, so the next record stays readable', () => {
    const dir = tmp()
    const s = new Spool(dir)
    s.open()
    writeFileSync(s.file, '{"k":"turn","id":"half')
    s.append('whole', rec(5))
    const parsed = parseSpool(readFileSync(s.file, 'utf8'))
    assert.deepEqual(parsed.pending.map((p) => p.id), ['whole'])
    assert.equal(parsed.bad, 1)
  })

  it('moves a record the sidecar rejects to rejected.jsonl instead of losing it', () => {
    const dir = tmp()
    const s = new Spool(dir)
    s.open()
    s.append('bad', rec(1))
    s.drop('bad', 'invalid params: user: too long')
    assert.equal(s.depth, 0)
    const rejected = readFileSync(join(dir, 'rejected.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l))
    assert.equal(rejected.length, 1)
    assert.equal(rejected[0].id, 'bad')
    assert.deepEqual(rejected[0].rec, rec(1))
  })

  it('a re-appended id moves to the end and is stored once', () => {
    const text = ['{"k":"turn","id":"a","rec":1}', '{"k":"turn","id":"b","rec":2}', '{"k":"turn","id":"a","rec":3}', ''].join('\n')
    assert.deepEqual(parseSpool(text).pending, [
      { id: 'b', rec: 2 },
      { id: 'a', rec: 3 },
    ])
  })

  it('works in memory when no folder is usable', () => {
    const s = new Spool(null)
    s.open()
    s.append('m', rec(1))
    assert.equal(s.depth, 1)
    s.ack('m')
    assert.equal(s.depth, 0)
    s.close()
  })
})
