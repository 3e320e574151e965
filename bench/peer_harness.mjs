// Drives StrataGate 0.2.16 (the TypeScript peer, built by bench/bench_peer.py) through its own API, in one Node
// process per size, and prints CPU per call: process.cpuUsage() deltas (user + system, every thread of the process).
//
//   node peer_harness.mjs build SPEC.json     writes the size's databases (then this process ends)
//   node peer_harness.mjs measure SPEC.json   measures on them in a fresh process; one JSON line on stdout
// (SPEC is written by bench_peer.py; building in another process keeps the builder's garbage out of RSS).
//
// What is called, and why it matches our requests:
// - recall: StrataGateRuntime.buildAutoContext(session), what the DSH plugin runs on every system-prompt
//   assembly (one model step): event and element search, block context, activated-memory rendering;
// - search: StrataGateRuntime.searchEvents(session, query), what its memory_search_events tool executes;
// - remember: StrataGate.addEvent(card), how an event card is stored (it has no memory_remember tool: cards come
//   from block extraction);
// - capture: StrataGate.appendTurn(turn), what the plugin's session-event hook runs for each folded turn.
// Databases are built in memory through the same API (appendTurn, addEvent) and written with one
// SqliteStorage.save; every measured call then runs on the persistent store (StrataGate.open), as in DSH.
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'

const [phase, specPath] = process.argv.slice(2)
const spec = JSON.parse(readFileSync(specPath, 'utf8'))
const core = await import(pathToFileURL(spec.peer.core).href)
const sqlite = await import(pathToFileURL(spec.peer.sqlite).href)
const { StrataGateRuntime } = await import(pathToFileURL(spec.peer.runtime).href)
const { StrataGate } = core
const { SqliteStorage } = sqlite

const BLOCK_TURNS = spec.block_turns
const NAMESPACE = 'dsh:global:bench' // what the runtime's global namespace mode names it (checked below)
const out = { node: process.version }

// Raw samples: bench_peer.py takes the percentiles, the same way as for ours.
function samples(cpu, wall, extra = {}) {
  return { cpu_ms: cpu, wall_ms: wall, ...extra }
}

// One call's CPU and wall milliseconds.
async function measured(fn) {
  const c = process.cpuUsage()
  const s = performance.now()
  const result = await fn()
  const wall = performance.now() - s
  const d = process.cpuUsage(c)
  return { cpu: (d.user + d.system) / 1000, wall, result }
}

// Up to `count` calls, stopping after the budget once `min_samples` are in (as bench_scale.py does).
async function sample(count, call) {
  const cpu = []
  const wall = []
  const results = []
  const deadline = performance.now() + spec.budget_s * 1000
  while (cpu.length < count && (cpu.length < spec.min_samples || performance.now() < deadline)) {
    const m = await measured(() => call(cpu.length))
    cpu.push(m.cpu)
    wall.push(m.wall)
    results.push(m.result)
  }
  return { cpu, wall, results }
}

const rssMb = () => process.memoryUsage().rss / 2 ** 20

function config(database) {
  return { database, namespaceMode: 'global', namespacePrefix: 'dsh', globalNamespace: 'bench',
    blockTurnSize: BLOCK_TURNS, ingestSubagents: false, maxOutputTokens: 10000 }
}

// The DSH model bridge with no model: block summaries fall back to StrataGate's deterministic summary, and no
// extractor or element projector runs (ours is measured with block summaries answered at once, counted apart).
const models = { run: (_session, fn) => fn(), summarizer: undefined, extractor: undefined, projector: undefined,
  takeSuccessfulResponses: () => [] }

// The part of a DSH session buildAutoContext reads: its id, header and the current user message.
function session(id, query) {
  return {
    id,
    header: { cwd: '/bench/project', origin: 'main' },
    events: [],
    deriveMessages: () => [{ role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text: query.text }] }],
  }
}

async function writeStore(path, namespace, build) {
  const memory = StrataGate.inMemory({ blockTurnSize: BLOCK_TURNS })
  await build(memory)
  const storage = new SqliteStorage({ filename: path })
  try {
    await storage.save(namespace, memory.exportSnapshot(), 0)
  } finally {
    await storage.close()
  }
  return memory
}

async function appendAll(memory, turns) {
  for (const turn of turns) await memory.appendTurn(turn)
}

function card(m, block) {
  return { title: m.title, summary: m.text, tags: [m.type], sourceBlockId: block.id, sourceMessageIds: [],
    temporal: { mentionedAt: m.mentioned_at } }
}

// ---------------------------------------------------------------- events: recall, search, remember

async function buildAll() {
  const t0 = performance.now()
  if (spec.remember_empty) {
    await writeStore(spec.remember_empty.db, NAMESPACE, (m) => appendAll(m, spec.remember_empty.source_turns))
  }
  if (spec.events) {
    const part = spec.events
    await writeStore(part.db, NAMESPACE, async (memory) => {
      await appendAll(memory, part.source_turns) // the block the event cards cite
      const block = memory.listBlocks()[0]
      for (const m of part.memories) await memory.addEvent(card(m, block))
      await appendAll(memory, part.reader_turns)
    })
  }
  if (spec.capture) await writeStore(spec.capture.db, NAMESPACE, (memory) => appendAll(memory, spec.capture.history))
  out[`build_${spec.size}_s`] = (performance.now() - t0) / 1000
}

async function events(part) {
  const query = { text: 'warm up' }
  const reader = session('reader', query)
  const runtime = new StrataGateRuntime(config(part.db), models)
  if (runtime.namespaceFor(reader) !== NAMESPACE) throw new Error(`namespace ${runtime.namespaceFor(reader)}`)
  const first = await measured(() => runtime.buildAutoContext(reader)) // opens the store: not counted
  out[`first_recall_${spec.size}`] = { cpu_ms: first.cpu, wall_ms: first.wall }
  out[`rss_after_first_recall_${spec.size}`] = rssMb()
  const renders = await sample(part.renders, (i) => {
    query.text = part.queries[i % part.queries.length]
    return runtime.buildAutoContext(reader)
  })
  out[`render_${spec.size}`] = samples(renders.cpu, renders.wall, { chars: renders.results.at(-1).length })
  const searches = await sample(part.searches, (i) =>
    runtime.searchEvents(reader, part.queries[i % part.queries.length]))
  out[`event_search_${spec.size}`] = samples(searches.cpu, searches.wall,
    { last_hits: searches.results.at(-1).results.length })
  const memory = await runtime.space(reader) // the plugin's store for this namespace (a TS-private method)
  const block = memory.listBlocks()[0]
  const adds = await sample(part.remembers.length, (i) => memory.addEvent(card(part.remembers[i], block)))
  out[`remember_${spec.size}`] = samples(adds.cpu, adds.wall, { events_after: memory.listEvents().length })
  out[`rss_end_${spec.size}`] = rssMb()
  await runtime.close()
}

// ---------------------------------------------------------------- an empty store: remember

async function rememberEmpty(part) {
  const store = await StrataGate.open({ database: part.db, namespace: NAMESPACE, blockTurnSize: BLOCK_TURNS })
  const block = store.listBlocks()[0]
  const adds = await sample(part.remembers.length, (i) => store.addEvent(card(part.remembers[i], block)))
  out.remember_0 = samples(adds.cpu, adds.wall, { events_after: store.listEvents().length })
  await store.close()
}

// ---------------------------------------------------------------- capture

async function capture(part) {
  const store = await StrataGate.open({ database: part.db, namespace: NAMESPACE, blockTurnSize: BLOCK_TURNS })
  const plain = { cpu: [], wall: [] }
  const sealing = { cpu: [], wall: [] }
  const deadline = performance.now() + spec.budget_s * 1000
  for (const turn of part.turns) {
    if (plain.cpu.length >= spec.min_samples && performance.now() > deadline) break
    const m = await measured(() => store.appendTurn(turn))
    const into = m.result.sealedBlock ? sealing : plain // a sealing capture summarises a block: counted apart
    into.cpu.push(m.cpu)
    into.wall.push(m.wall)
  }
  out[`capture_${spec.size}`] = samples(plain.cpu, plain.wall, {
    seal_cpu_ms: sealing.cpu, seal_wall_ms: sealing.wall,
    history: spec.size, blocks: store.listBlocks().length,
  })
  await store.close()
}

if (phase === 'build') {
  await buildAll()
} else if (phase === 'measure') {
  if (spec.remember_empty) await rememberEmpty(spec.remember_empty)
  if (spec.events) await events(spec.events)
  if (spec.capture) await capture(spec.capture)
} else {
  throw new Error(`usage: peer_harness.mjs build|measure SPEC.json (not ${phase})`)
}
process.stdout.write(JSON.stringify(out) + '\n')
