// StrataGate Memory page: the browser side of DSH Settings → "StrataGate Memory" and of `stratagate ui`.
//
// Vanilla JS (ES2020, no framework, no build step). One file so DSH's client.js and the standalone index.html load
// the same code with one <script>; `StrataGateMemoryPage.mount(element, {api, lang})` draws the page into element.
// It talks only to the JSON routes under `api` (docs/protocol.md, "The Memory page"). Every text from the server
// is data: it reaches the DOM through textContent / text nodes only, never as markup.
// The pure parts (i18n, labels, graph layout, what to refetch on a change) are exported as `_internals` for the
// node tests (tests/js/memory-page.test.mjs).
;(function (root) {
  'use strict'

  // Every UI text, English and Chinese (the same keys; tests/js/memory-page.test.mjs checks both are complete).
  const en = {
    'app.title': 'StrataGate Memory',
    'app.namespace': 'Namespace',
    'app.noNamespace': 'No namespace holds memory yet. Memory appears here after the first captured turn.',
    'app.loading': 'Loading…',
    'app.error': 'Could not load: {error}',
    'app.retry': 'Try again',
    'app.close': 'Close',
    'app.cancel': 'Cancel',
    'app.save': 'Save',
    'app.none': 'None',
    'app.yes': 'yes',
    'app.no': 'no',
    'app.more': 'Next page',
    'app.previous': 'Previous page',
    'app.range': '{from}–{to} of {total}',
    'app.empty': 'Nothing here yet.',
    'app.live': 'Live',
    'app.offline': 'Live updates paused, reconnecting…',
    'tab.overview': 'Overview',
    'tab.recent': 'Recent memory',
    'tab.longterm': 'Long-term memory',
    'tab.graph': 'Graph',
    'tab.evidence': 'Evidence',
    'tab.imports': 'Imports',
    'tab.audit': 'Audit',
    'tab.settings': 'Settings',
    'tabs.label': 'Memory sections',
    'tabs.menu': 'Section',
    'status.active': 'active',
    'status.superseded': 'superseded',
    'status.disputed': 'disputed',
    'status.forgotten': 'forgotten',
    'status.archived': 'archived',
    'status.pending': 'pending',
    'status.ready': 'ready',
    'status.removed': 'removed',
    'status.queued': 'queued',
    'status.running': 'running',
    'status.done': 'done',
    'status.failed': 'failed',
    'status.scheduled': 'scheduled',
    'status.current': 'current',
    'status.past': 'not holding',
    'export.json': 'Export JSON',
    'export.markdown': 'Export Markdown',
    'export.done': 'Downloaded {filename}',
    'delete.button': 'Delete namespace…',
    'delete.title': 'Delete namespace “{name}”',
    'delete.body': 'This erases every session, message, block, event, graph fact and import of this namespace from the database. It cannot be undone.',
    'delete.prompt': 'Type the namespace name to confirm:',
    'delete.confirm': 'Delete for ever',
    'delete.done': 'Namespace {name} deleted',
    'overview.health': 'Sidecar health',
    'overview.version': 'Version',
    'overview.uptime': 'Uptime',
    'overview.db': 'Database',
    'overview.storage': 'Storage',
    'overview.storageValue': '{db} (+ {wal} write-ahead log)',
    'overview.schema': 'Schema version',
    'overview.model': 'Model',
    'overview.modelRoute': 'Model route in use',
    'overview.modelMode.auto': 'model calls on',
    'overview.modelMode.none': 'no model (rules only)',
    'overview.lastError': 'Last error',
    'overview.noError': 'No error recorded',
    'overview.dense': 'Dense search',
    'overview.team': 'Team memory',
    'team.off': 'off: set the plugin options teamDsn and teamMember (or STRATAGATE_TEAM_DSN and STRATAGATE_TEAM_MEMBER) and restart',
    'team.on': 'on · {member} · {server}',
    'team.outbox': '{n} change(s) not pushed yet',
    'team.behind': '{project}: {n} server change(s) not pulled yet',
    'team.synced': 'in sync',
    'team.error': 'last error: {error}',
    'overview.host': 'DeepSeek Harness',
    'overview.host.supported': 'DSH {dsh} (supported)',
    'overview.host.unsupported': 'DSH {dsh} is not a version StrataGate supports (supported: {supported}); memory may not work. Install the supported DSH: README, "Getting DSH".',
    'overview.host.cordis': 'DSH {dsh} runs on Cordis {cordis}, not the pinned {pinned}; install the supported DSH: README, "Getting DSH".',
    'overview.host.unknown': 'Could not tell which DSH runs StrataGate (supported: {supported}).',
    'overview.jobs': 'Job queue',
    'overview.failedJobs': 'Failed jobs',
    'overview.noFailed': 'No failed jobs.',
    'overview.retry': 'Retry',
    'overview.retryAll': 'Retry all failed',
    'overview.retried': 'Retrying {ids}',
    'overview.namespaces': 'Namespaces',
    'job.id': 'Job',
    'job.kind': 'Kind',
    'job.subject': 'Subject',
    'job.attempts': 'Attempts',
    'job.error': 'Error',
    'job.updated': 'Updated',
    'ns.name': 'Name',
    'ns.sessions': 'Sessions',
    'ns.turns': 'Turns',
    'ns.messages': 'Messages',
    'ns.blocks': 'Blocks (ready / pending)',
    'ns.events': 'Events',
    'ns.graph': 'Graph nodes',
    'ns.imports': 'Imports',
    'ns.lastTurn': 'Last turn',
    'ns.userTier': 'shares the user tier',
    'recent.sessions': 'Sessions',
    'recent.blocks': 'Blocks of {session}',
    'recent.noSessions': 'No sessions in this namespace.',
    'recent.noBlocks': 'No sealed blocks in this session yet.',
    'recent.turns': 'turns {first}–{last}',
    'recent.turn': 'turn {n}',
    'recent.level': 'current level L{level}',
    'recent.tools': 'tool records: {n}',
    'recent.untitled': '(no title yet: the summary is pending)',
    'recent.sessionMeta': 'turns: {turns} · ready: {ready} · pending: {pending}',
    'recent.levels': 'Expand at level',
    'recent.levelHint': 'L{level}: {tokens} tokens',
    'recent.levelName.0': 'title',
    'recent.levelName.1': 'one line',
    'recent.levelName.2': 'summary',
    'recent.levelName.3': 'detailed summary',
    'recent.levelName.4': 'condensed transcript',
    'recent.levelName.5': 'full transcript',
    'recent.toolRecords': 'Tool records',
    'recent.messages': 'Messages',
    'recent.source': 'summary by {source}',
    'tool.name': 'Tool',
    'tool.call': 'Call id',
    'tool.args': 'Arguments',
    'tool.result': 'Result',
    'events.search': 'Search events',
    'events.searchPlaceholder': 'Words of a title, summary or quote',
    'events.status': 'Status',
    'events.filter.inMemory': 'In memory (active, superseded, disputed)',
    'events.filter.all': 'All, including forgotten and archived',
    'events.type': 'Type',
    'events.anyType': 'Any type',
    'events.scope': 'Scope',
    'events.anyScope': 'Any scope',
    'events.scope.project': 'project',
    'events.scope.user': 'user',
    'events.none': 'No events match.',
    'events.mentioned': 'Mentioned',
    'events.happened': 'Happened',
    'events.happenedUnknown': 'not stated',
    'events.pinned': 'pinned',
    'events.userTier': 'user tier',
    'events.replaces': 'replaces',
    'events.disputes': 'disputed with',
    'events.supersededBy': 'superseded by',
    'events.fromImport': 'from import {id}',
    'events.confidence': 'confidence {value}',
    'events.open': 'Open {id}',
    'events.pick': 'Open an event to see its sources, its history and the review actions.',
    'event.narrative': 'Narrative',
    'event.quotes': 'Quotes',
    'event.tags': 'Tags',
    'event.participants': 'Participants',
    'event.sources': 'Sources',
    'event.noSources': 'No sources recorded.',
    'event.history': 'History',
    'event.mergedInto': 'merged into',
    'event.merged': 'absorbed',
    'event.origin': 'origin {origin}',
    'event.session': 'session {session}',
    'event.block': 'block {block}',
    'event.timeOriginal': 'as said: “{text}”',
    'event.timeStatus': '({status})',
    'event.sourceLine': '{message} · {session} turn {turn} · {role}',
    'event.sourceImport': 'import {id} {ref}',
    'event.sourceTool': 'tool call {call}',
    'action.edit': 'Edit…',
    'action.forget': 'Forget',
    'action.restore': 'Restore',
    'action.pin': 'Pin',
    'action.unpin': 'Unpin',
    'action.merge': 'Merge…',
    'action.resolve': 'Resolve dispute…',
    'action.undo': 'Undo',
    'action.undone': 'Undone',
    'action.failed': 'Failed: {error}',
    'done.edit': 'Saved as {id} (replaces {old})',
    'done.forget': 'Forgot {id}',
    'done.restore': 'Restored {id}',
    'done.pin': 'Pinned {id}',
    'done.unpin': 'Unpinned {id}',
    'done.merge': 'Merged {merged} into {survivor}',
    'done.resolve': 'Dispute resolved',
    'done.importAdd': 'Imported {file}: {n} new events',
    'done.importRemove': 'Removed {id}',
    'done.settings': 'Settings saved and applied',
    'edit.title': 'Edit {id}',
    'edit.note': 'The event keeps its history: the corrected text becomes a new event that supersedes this one.',
    'edit.fieldTitle': 'Title',
    'edit.fieldSummary': 'Summary',
    'edit.unchanged': 'Change the title, the summary or the time first.',
    'merge.title': 'Merge another event into {id}',
    'merge.note': 'The chosen event is folded into {id}; its sources move here. Undo unmerges it.',
    'merge.search': 'Find the event to merge',
    'merge.none': 'No other event matches.',
    'merge.choose': 'Merge {id}',
    'resolve.title': 'Resolve the dispute of {id}',
    'resolve.keepThis': 'Keep {keep}, supersede {other}',
    'resolve.keepBoth': 'Keep both ({a} and {b}) as active',
    'resolve.noPair': 'This event is not in a dispute.',
    'message.title': 'Message {id}',
    'message.around': 'Neighbouring messages',
    'message.hidden': 'hidden',
    'message.redacted': '{n} secret(s) redacted before storage; the rest is as captured',
    'message.tool': 'tool {name}',
    'graph.asOf': 'Show the graph as of',
    'graph.apply': 'Show',
    'graph.badDate': 'Not a date: write it like {example}.',
    'graph.now': 'Now',
    'graph.search': 'Filter nodes',
    'graph.history': 'List facts that do not hold then',
    'graph.showing': 'State as of {date}',
    'graph.empty': 'No graph facts at this date.',
    'graph.facts': 'Facts',
    'graph.label': 'Knowledge graph: {nodes} nodes, {edges} edges',
    'graph.node': '{name} ({kind}, {degree} links)',
    'graph.selected': 'Facts of {name}',
    'graph.clear': 'All facts',
    'fact.id': 'Fact',
    'fact.subject': 'Subject',
    'fact.predicate': 'Predicate',
    'fact.object': 'Object',
    'fact.validFrom': 'Valid from',
    'fact.validTo': 'Valid until',
    'fact.status': 'Status',
    'fact.current': 'Holds then',
    'fact.events': 'Events',
    'fact.open': 'open',
    'fact.openEnded': '—',
    'evidence.receipts': 'Use receipts',
    'evidence.assessments': 'Assessments',
    'evidence.session': 'Session',
    'evidence.anySession': 'All sessions',
    'evidence.noReceipts': 'No answer recorded what it relied on yet.',
    'evidence.noAssessments': 'No retrieval was assessed yet.',
    'evidence.turn': 'turn {turn}',
    'evidence.answer': 'Answer note',
    'evidence.uses': 'Relied on',
    'evidence.noUses': 'nothing from memory',
    'evidence.batch': 'Batch',
    'evidence.verdict': 'Verdict',
    'evidence.refs': 'Refs',
    'evidence.note': 'Note',
    'evidence.at': 'At',
    'imports.add': 'Add an import from a file',
    'imports.file': 'File (Markdown, text, mem0 or ChatGPT JSON)',
    'imports.scope': 'Scope',
    'imports.reading': 'Reading {file}…',
    'imports.none': 'No imports in this namespace.',
    'imports.remove': 'Remove',
    'imports.items': 'items: {n}',
    'imports.eventCounts': 'events: {counts}',
    'imports.created': 'imported {at}',
    'imports.removedAt': 'removed {at}',
    'audit.subject': 'Subject (e.g. evt_3)',
    'audit.actor': 'Actor',
    'audit.anyActor': 'Any actor',
    'audit.none': 'No audit entries.',
    'audit.bookkeeping': 'Show the job queue’s own entries',
    'audit.hidden': '{n} job queue entries on this page are hidden.',
    'audit.older': 'Older entries',
    'audit.newest': 'Newest',
    'audit.change': 'Show the change',
    'audit.before': 'Before',
    'audit.after': 'After',
    'settings.title': 'Plugin settings',
    'settings.note': 'Saved in the database and applied at once, without a restart.',
    'settings.source.default': 'not set here',
    'settings.source.env': 'from the environment',
    'settings.source.page': 'set here',
    'settings.default': 'default {value}',
    'settings.range': '{min}–{max}',
    'settings.unchanged': 'Nothing changed.',
    'settings.invalid': 'Some values are not valid.',
    'confirm.retry.title': 'Retry job {id}?',
    'confirm.retry.body': 'It runs again now. A retry cannot be undone.',
    'confirm.retryAll.title': 'Retry every failed job?',
    'confirm.retryAll.body': '{n} failed jobs run again now. A retry cannot be undone.',
    'confirm.retryGo': 'Retry',
    'confirm.removeImport.title': 'Remove import {id}?',
    'confirm.removeImport.body': 'Its events are archived and what they replaced is current again. Removing an import cannot be undone: import the file again to bring it back.',
    'confirm.removeGo': 'Remove',
    'merge.preview': 'Merge {merged} into {survivor}?',
    'merge.previewNote': '{merged} becomes superseded by {survivor}, and its sources move to {survivor}. Undo (in the message that follows, or in the Audit tab) takes them apart again.',
    'merge.stays': 'Stays',
    'merge.goes': 'Is merged into it',
    'merge.confirm': 'Merge',
    'merge.back': 'Back',
    'merge.eligible': 'Only events that can be merged are listed: active, not pinned, of the same scope.',
    'edit.fieldWhen': 'When (words or a date)',
    'edit.whenHelp': 'Read from when it was said ({at}); leave it empty for no time.',
    'edit.fieldTimeStatus': 'Time status',
    'timeStatus.planned': 'planned',
    'timeStatus.occurred': 'happened',
    'timeStatus.ongoing': 'ongoing',
    'timeStatus.cancelled': 'cancelled',
    'timeStatus.unknown': 'not stated',
    'type.decision': 'decision',
    'type.preference': 'preference',
    'type.plan': 'plan',
    'type.change': 'change',
    'type.fact': 'fact',
    'type.event': 'event',
    'events.scope.session': 'session',
    'origin.remember': 'remembered',
    'origin.extraction': 'extracted',
    'origin.import': 'imported',
    'actor.user': 'you',
    'actor.agent': 'agent',
    'actor.capture': 'capture',
    'actor.model': 'model',
    'actor.system': 'system',
    'who.user': 'You',
    'who.agent': 'The agent',
    'who.capture': 'Capture',
    'who.model': 'The model',
    'who.system': 'StrataGate',
    'jobKind.block_summary': 'block summary',
    'jobKind.event_extraction': 'event extraction',
    'jobKind.graph_projection': 'graph update',
    'jobKind.embedding': 'embedding',
    'jobKind.maintenance': 'maintenance',
    'role.user': 'user',
    'role.assistant': 'assistant',
    'role.tool': 'tool',
    'role.system': 'system',
    'source.model': 'the model',
    'source.fallback': 'rules (no model)',
    'verdict.sufficient': 'sufficient',
    'verdict.partial': 'partial',
    'verdict.wrong': 'wrong',
    'dense.ready': 'ready',
    'dense.dim': '{n} dimensions',
    'dense.off': 'off',
    'dense.disabled': 'off',
    'dense.loading': 'loading',
    'dense.failed': 'failed',
    'dense.unavailable': 'unavailable',
    'imports.preview': 'Import {file}?',
    'imports.previewCount': '{count} items read as {format}.',
    'imports.previewShown': 'The first {n}:',
    'imports.confirm': 'Add {count} items',
    'imports.warnings': 'Notes from reading the file',
    'undid.event.forgotten': 'Undone: Forget {id}. It is back in memory.',
    'undid.event.restored': 'Undone: Restore {id}. It is forgotten again.',
    'undid.event.pinned': 'Undone: Pin {id}.',
    'undid.event.unpinned': 'Undone: Unpin {id}.',
    'undid.event.edited': 'Undone: Edit of {id}. The original is current again.',
    'undid.event.merged': 'Undone: Merge of {id}. It stands on its own again.',
    'undid.event.resolved': 'Undone: Resolve of {id}. The dispute is open again.',
    'undid.event.superseded': 'Undone: Supersede of {id}.',
    'undid.import.created': 'Undone: Import {id}. Its events are archived.',
    'undid.settings.changed': 'Undone: Settings change. The previous settings apply again.',
    'audit.s.event.forgotten': '{who} forgot {id} {title}',
    'audit.s.event.restored': '{who} restored {id} {title}',
    'audit.s.event.pinned': '{who} pinned {id} {title}',
    'audit.s.event.unpinned': '{who} unpinned {id} {title}',
    'audit.s.event.edited': '{who} edited {id} {title}',
    'audit.s.event.merged': '{who} merged {id} {title} into another event',
    'audit.s.event.unmerged': '{who} took {id} {title} out of a merge',
    'audit.s.event.resolved': '{who} resolved the dispute of {id} {title}',
    'audit.s.event.superseded': '{who} marked {id} {title} as superseded',
    'audit.s.event.unsuperseded': '{who} made {id} {title} current again',
    'audit.s.event.disputed': '{who} marked {id} {title} as disputed',
    'audit.s.event.settled': '{who} settled the dispute of {id} {title}',
    'audit.s.event.archived': '{who} archived {id} {title}',
    'audit.s.event.erased': '{who} erased {id}',
    'audit.s.event.remember': '{who} remembered {id} {title}',
    'audit.s.event.extraction': '{who} extracted {id} {title}',
    'audit.s.event.import': '{who} imported {id} {title}',
    'audit.s.event.sources_added': '{who} added sources to {id} {title}',
    'audit.s.event.suppressed': '{who} held back a restatement of {id} {title}',
    'audit.s.event.extraction_dropped': '{who} dropped an extracted event {id}',
    'audit.s.import.created': '{who} imported {id}',
    'audit.s.import.removed': '{who} removed import {id}',
    'audit.s.settings.changed': '{who} changed the settings',
    'audit.s.namespace.settings_changed': '{who} changed this namespace’s settings',
    'audit.s.namespace.deleted': '{who} deleted namespace {id}',
    'audit.s.job.retried': '{who} retried {id}',
    'audit.s.job.enqueued': '{who} queued {id}',
    'audit.s.job.done': '{who} finished {id}',
    'audit.s.job.failed': '{who}: {id} failed',
    'audit.s.job.attempt_failed': '{who}: an attempt of {id} failed',
    'audit.s.job.requeued_for_upgrade': '{who} queued {id} again to redo it with the model',
    'audit.s.audit.undone': '{who} undid entry {id}',
    'audit.s.block.sealed': '{who} sealed {id}',
    'audit.s.block.summarized': '{who} summarised {id}',
    'audit.s.block.summary_fallback': '{who} summarised {id} by rules (no model)',
    'audit.s.block.events_extracted': '{who} read the events of {id}',
    'audit.s.block.expanded': '{who} expanded {id}',
    'audit.s.fact.asserted': '{who} added graph fact {id}',
    'audit.s.fact.superseded': '{who} superseded graph fact {id}',
    'audit.s.fact.updated': '{who} updated graph fact {id}',
    'audit.s.message.erased': '{who} erased message {id}',
    'audit.s.evidence.used': '{who} recorded what an answer relied on ({id})',
    'audit.s.evidence.assessed': '{who} assessed a retrieval ({id})',
    'audit.s.maintenance.run': '{who} ran maintenance',
    'audit.s.maintenance.scheduled': '{who} scheduled maintenance',
    'audit.s.fact.active': '{who} made graph fact {id} current again',
    'audit.s.fact.archived': '{who} archived graph fact {id}',
    'audit.s.fact.disputed': '{who} marked graph fact {id} as disputed',
    'audit.s.graph.batch_projected': '{who} updated the graph from {id}',
    'audit.s.turn.captured': '{who} stored {id}',
    'audit.s.other': '{who}: {action} {id}',
    'audit.undoneBy': 'Undone (entry #{id})',
    'audit.field': 'Field',
    'audit.entry': 'Entry #{id}',
    'settings.group.memory': 'Memory',
    'settings.group.memoryHelp': 'How conversations become memory and which memory a project sees.',
    'settings.group.recall': 'Recall',
    'settings.group.recallHelp': 'How much memory is put in front of the model at each step.',
    'settings.group.context': 'Context window',
    'settings.group.contextHelp': 'How StrataGate keeps the conversation inside the model’s context window.',
    'settings.group.team': 'Team memory',
    'settings.group.teamHelp': 'Share this project’s team memories with your team through a PostgreSQL database. Transcripts and everything else stay on this machine. Saving restarts the sync.',
    'settings.group.advanced': 'Advanced',
    'settings.group.advancedHelp': 'Thresholds of the context engine. The mode above sets all of them; changing one here makes the mode “custom”.',
    'settings.choice.project': 'per project',
    'settings.choice.session': 'per session',
    'settings.choice.global': 'one for everything',
    'settings.choice.auto': 'use the model',
    'settings.choice.none': 'no model (rules only)',
    'settings.choice.cost': 'save cost',
    'settings.choice.quality': 'best quality',
    'settings.choice.custom': 'custom',
    'settings.on': 'On',
    'settings.contextSaved': 'Context settings saved; they apply from the next turn.',
    'settings.contextUnavailable': 'The context engine’s settings could not be read: {error}',
    'settings.confirmContext': 'Save the context settings? This change is not in the audit and cannot be undone there; set the values back here to revert.',
    'ctx.enabled': "Manage the context window",
    'ctx.enabled.help': "Off: history is archived but never shortened.",
    'ctx.auto_fold': "Fold old history automatically",
    'ctx.auto_fold.help': "Write a short digest of old rounds when reminders go unanswered.",
    'ctx.reminders': "Remind the agent to fold",
    'ctx.reminders.help': "Tell the agent when the history has grown large.",
    'ctx.cost_aware': "Shorten only when it saves money",
    'ctx.cost_aware.help': "Change the history only when the saved tokens outweigh the one-time cache miss.",
    'ctx.mid_turn_cards': "Shorten long turns before each step",
    'ctx.mid_turn_cards.help': "Inside a long turn, replace finished tool rounds by short cards.",
    'ctx.pressure_line': "Shorten mid-turn above this share of the window",
    'ctx.force_line': "Always shorten above this share of the window",
    'ctx.protected_rounds': "Latest rounds kept as they are",
    'ctx.protected_share': "Kept rounds take at most this share of the window",
    'ctx.card_min_tokens': "Tool results smaller than this stay whole (tokens)",
    'ctx.price_miss': "Price of an uncached input token",
    'ctx.price_hit': "Price of a cached input token",
    'ctx.min_batch_tokens': "Smallest saving worth a change (tokens)",
    'ctx.min_batch_share': "Smallest saving worth a change (share of the window)",
    'ctx.upgrade_factor': "A second fold needs this many times the smallest saving",
    'ctx.max_deferrals': "Turns a model fold may wait",
    'ctx.requests_min': "Fewest model requests expected in a turn",
    'ctx.requests_max': "Most model requests expected in a turn",
    'ctx.reminder_every': "Remind after this much growth (tokens)",
    'ctx.reminder_rearm': "Remind again after (tokens)",
    'ctx.reminder_rearm_high': "Remind again, above the always-shorten line, after (tokens)",
    'ctx.digest_line': "After reminders, digest above this share of the window",
    'ctx.digest_reminders': "Reminders before a digest",
    'ctx.digest_force_line': "Digest above this share of the window, reminded or not",
    'ctx.digest_cooldown': "Growth between two digests (tokens)",
    'ctx.digest_target': "Fold until old history is this share of the window",
    'ctx.digest_share': "A digest’s size, as a share of what it replaces",
    'ctx.digest_min_chars': "Shortest text worth a digest (characters)",
    'ctx.old_rounds_budget': "Digest old rounds beyond this many tokens (0: never)",
    'ctx.old_rounds_share': "Digest old rounds beyond this share of the window",
    'ctx.old_rounds_age': "Turns a round stays as it is",
    'time.s': '{n} s',
    'time.min': '{n} min',
    'time.h': '{h} h {m} min',
    'time.d': '{d} d {h} h',
  }
  const zh = {
    'app.title': 'StrataGate 记忆',
    'app.namespace': '命名空间',
    'app.noNamespace': '还没有任何命名空间保存记忆。第一轮对话被记录后，记忆会显示在这里。',
    'app.loading': '加载中…',
    'app.error': '无法加载：{error}',
    'app.retry': '重试',
    'app.close': '关闭',
    'app.cancel': '取消',
    'app.save': '保存',
    'app.none': '无',
    'app.yes': '是',
    'app.no': '否',
    'app.more': '下一页',
    'app.previous': '上一页',
    'app.range': '第 {from}–{to} 条，共 {total} 条',
    'app.empty': '暂无内容。',
    'app.live': '实时',
    'app.offline': '实时更新已暂停，正在重新连接…',
    'tab.overview': '概览',
    'tab.recent': '近期记忆',
    'tab.longterm': '长期记忆',
    'tab.graph': '知识图谱',
    'tab.evidence': '证据',
    'tab.imports': '导入',
    'tab.audit': '审计',
    'tab.settings': '设置',
    'tabs.label': '记忆分区',
    'tabs.menu': '分区',
    'status.active': '有效',
    'status.superseded': '已被取代',
    'status.disputed': '有争议',
    'status.forgotten': '已遗忘',
    'status.archived': '已归档',
    'status.pending': '待处理',
    'status.ready': '就绪',
    'status.removed': '已移除',
    'status.queued': '排队中',
    'status.running': '运行中',
    'status.done': '已完成',
    'status.failed': '失败',
    'status.scheduled': '已计划',
    'status.current': '当前成立',
    'status.past': '当时不成立',
    'export.json': '导出 JSON',
    'export.markdown': '导出 Markdown',
    'export.done': '已下载 {filename}',
    'delete.button': '删除命名空间…',
    'delete.title': '删除命名空间“{name}”',
    'delete.body': '这会从数据库中抹除该命名空间的所有会话、消息、区块、事件、图谱事实和导入，且无法撤销。',
    'delete.prompt': '请输入命名空间名称以确认：',
    'delete.confirm': '永久删除',
    'delete.done': '已删除命名空间 {name}',
    'overview.health': '边车进程状态',
    'overview.version': '版本',
    'overview.uptime': '运行时间',
    'overview.db': '数据库',
    'overview.storage': '存储',
    'overview.storageValue': '{db}（另有预写日志 {wal}）',
    'overview.schema': '数据库结构版本',
    'overview.model': '模型',
    'overview.modelRoute': '当前模型路由',
    'overview.modelMode.auto': '启用模型调用',
    'overview.modelMode.none': '不用模型（仅规则）',
    'overview.lastError': '最近错误',
    'overview.noError': '没有记录到错误',
    'overview.dense': '向量检索',
    'overview.team': '团队记忆',
    'team.off': '关闭：在插件配置中设置 teamDsn 和 teamMember（或 STRATAGATE_TEAM_DSN 和 STRATAGATE_TEAM_MEMBER）后重启',
    'team.on': '开启 · {member} · {server}',
    'team.outbox': '{n} 条更改尚未推送',
    'team.behind': '{project}：服务器上 {n} 条更改尚未拉取',
    'team.synced': '已同步',
    'team.error': '最近错误：{error}',
    'overview.host': '宿主 DSH',
    'overview.host.supported': 'DSH {dsh}（受支持）',
    'overview.host.unsupported': 'DSH {dsh} 不是 StrataGate 支持的版本（支持：{supported}），记忆可能无法工作。请按 README 安装受支持的 DSH。',
    'overview.host.cordis': 'DSH {dsh} 运行在 Cordis {cordis} 上，而不是固定的 {pinned}；请按 README 安装受支持的 DSH。',
    'overview.host.unknown': '无法确定运行 StrataGate 的 DSH 版本（支持：{supported}）。',
    'overview.jobs': '任务队列',
    'overview.failedJobs': '失败的任务',
    'overview.noFailed': '没有失败的任务。',
    'overview.retry': '重试',
    'overview.retryAll': '重试全部失败任务',
    'overview.retried': '正在重试 {ids}',
    'overview.namespaces': '命名空间',
    'job.id': '任务',
    'job.kind': '类型',
    'job.subject': '对象',
    'job.attempts': '尝试次数',
    'job.error': '错误',
    'job.updated': '更新时间',
    'ns.name': '名称',
    'ns.sessions': '会话',
    'ns.turns': '轮次',
    'ns.messages': '消息',
    'ns.blocks': '区块（就绪 / 待处理）',
    'ns.events': '事件',
    'ns.graph': '图谱节点',
    'ns.imports': '导入',
    'ns.lastTurn': '最近一轮',
    'ns.userTier': '共享用户层',
    'recent.sessions': '会话',
    'recent.blocks': '{session} 的区块',
    'recent.noSessions': '此命名空间没有会话。',
    'recent.noBlocks': '此会话还没有封存的区块。',
    'recent.turns': '第 {first}–{last} 轮',
    'recent.turn': '第 {n} 轮',
    'recent.level': '当前层级 L{level}',
    'recent.tools': '{n} 条工具记录',
    'recent.untitled': '（尚无标题：摘要待生成）',
    'recent.sessionMeta': '{turns} 轮 · {ready} 个就绪 · {pending} 个待处理',
    'recent.levels': '按层级展开',
    'recent.levelHint': 'L{level}：{tokens} 个 token',
    'recent.levelName.0': '标题',
    'recent.levelName.1': '一句话',
    'recent.levelName.2': '摘要',
    'recent.levelName.3': '详细摘要',
    'recent.levelName.4': '精简记录',
    'recent.levelName.5': '完整记录',
    'recent.toolRecords': '工具记录',
    'recent.messages': '消息',
    'recent.source': '摘要来源：{source}',
    'tool.name': '工具',
    'tool.call': '调用 ID',
    'tool.args': '参数',
    'tool.result': '结果',
    'events.search': '搜索事件',
    'events.searchPlaceholder': '标题、摘要或引文中的词',
    'events.status': '状态',
    'events.filter.inMemory': '记忆中（有效、已被取代、有争议）',
    'events.filter.all': '全部，包括已遗忘和已归档',
    'events.type': '类型',
    'events.anyType': '任意类型',
    'events.scope': '范围',
    'events.anyScope': '任意范围',
    'events.scope.project': '项目',
    'events.scope.user': '用户',
    'events.none': '没有匹配的事件。',
    'events.mentioned': '提及时间',
    'events.happened': '发生时间',
    'events.happenedUnknown': '未说明',
    'events.pinned': '已置顶',
    'events.userTier': '用户层',
    'events.replaces': '取代了',
    'events.disputes': '与之冲突',
    'events.supersededBy': '被取代为',
    'events.fromImport': '来自导入 {id}',
    'events.confidence': '置信度 {value}',
    'events.open': '打开 {id}',
    'events.pick': '打开一个事件，查看其来源、历史和审核操作。',
    'event.narrative': '叙述',
    'event.quotes': '引文',
    'event.tags': '标签',
    'event.participants': '参与者',
    'event.sources': '来源',
    'event.noSources': '没有记录来源。',
    'event.history': '历史',
    'event.mergedInto': '已合并到',
    'event.merged': '已并入',
    'event.origin': '来源方式 {origin}',
    'event.session': '会话 {session}',
    'event.block': '区块 {block}',
    'event.timeOriginal': '原话：“{text}”',
    'event.timeStatus': '（{status}）',
    'event.sourceLine': '{message} · {session} 第 {turn} 轮 · {role}',
    'event.sourceImport': '导入 {id} {ref}',
    'event.sourceTool': '工具调用 {call}',
    'action.edit': '编辑…',
    'action.forget': '遗忘',
    'action.restore': '恢复',
    'action.pin': '置顶',
    'action.unpin': '取消置顶',
    'action.merge': '合并…',
    'action.resolve': '解决冲突…',
    'action.undo': '撤销',
    'action.undone': '已撤销',
    'action.failed': '失败：{error}',
    'done.edit': '已保存为 {id}（取代 {old}）',
    'done.forget': '已遗忘 {id}',
    'done.restore': '已恢复 {id}',
    'done.pin': '已置顶 {id}',
    'done.unpin': '已取消置顶 {id}',
    'done.merge': '已将 {merged} 合并到 {survivor}',
    'done.resolve': '冲突已解决',
    'done.importAdd': '已导入 {file}：新增 {n} 个事件',
    'done.importRemove': '已移除 {id}',
    'done.settings': '设置已保存并生效',
    'edit.title': '编辑 {id}',
    'edit.note': '事件会保留历史：修改后的内容成为一个新事件，并取代这一条。',
    'edit.fieldTitle': '标题',
    'edit.fieldSummary': '摘要',
    'edit.unchanged': '请先修改标题、摘要或时间。',
    'merge.title': '将另一个事件合并到 {id}',
    'merge.note': '所选事件会并入 {id}，其来源移到这里。撤销即可拆分。',
    'merge.search': '查找要合并的事件',
    'merge.none': '没有其他匹配的事件。',
    'merge.choose': '合并 {id}',
    'resolve.title': '解决 {id} 的冲突',
    'resolve.keepThis': '保留 {keep}，取代 {other}',
    'resolve.keepBoth': '两者（{a} 和 {b}）都保持有效',
    'resolve.noPair': '此事件没有冲突。',
    'message.title': '消息 {id}',
    'message.around': '前后的消息',
    'message.hidden': '已隐藏',
    'message.redacted': '存储前已脱敏 {n} 处密钥；其余内容与捕获时一致',
    'message.tool': '工具 {name}',
    'graph.asOf': '查看此日期的图谱',
    'graph.apply': '查看',
    'graph.badDate': '不是日期：请按 {example} 的格式填写。',
    'graph.now': '现在',
    'graph.search': '筛选节点',
    'graph.history': '列出当时不成立的事实',
    'graph.showing': '{date} 时的状态',
    'graph.empty': '此日期没有图谱事实。',
    'graph.facts': '事实',
    'graph.label': '知识图谱：{nodes} 个节点，{edges} 条边',
    'graph.node': '{name}（{kind}，{degree} 条关联）',
    'graph.selected': '{name} 的事实',
    'graph.clear': '全部事实',
    'fact.id': '事实',
    'fact.subject': '主语',
    'fact.predicate': '谓词',
    'fact.object': '宾语',
    'fact.validFrom': '生效自',
    'fact.validTo': '有效至',
    'fact.status': '状态',
    'fact.current': '当时成立',
    'fact.events': '事件',
    'fact.open': '打开',
    'fact.openEnded': '—',
    'evidence.receipts': '使用回执',
    'evidence.assessments': '评估',
    'evidence.session': '会话',
    'evidence.anySession': '全部会话',
    'evidence.noReceipts': '还没有回答记录它依据了什么。',
    'evidence.noAssessments': '还没有检索被评估。',
    'evidence.turn': '第 {turn} 轮',
    'evidence.answer': '回答说明',
    'evidence.uses': '依据',
    'evidence.noUses': '未使用记忆',
    'evidence.batch': '批次',
    'evidence.verdict': '结论',
    'evidence.refs': '引用',
    'evidence.note': '说明',
    'evidence.at': '时间',
    'imports.add': '从文件添加导入',
    'imports.file': '文件（Markdown、文本、mem0 或 ChatGPT JSON）',
    'imports.scope': '范围',
    'imports.reading': '正在读取 {file}…',
    'imports.none': '此命名空间没有导入。',
    'imports.remove': '移除',
    'imports.items': '{n} 项',
    'imports.eventCounts': '事件：{counts}',
    'imports.created': '导入于 {at}',
    'imports.removedAt': '移除于 {at}',
    'audit.subject': '对象（如 evt_3）',
    'audit.actor': '操作者',
    'audit.anyActor': '任意操作者',
    'audit.none': '没有审计记录。',
    'audit.bookkeeping': '显示任务队列自身的记录',
    'audit.hidden': '本页隐藏了 {n} 条任务队列记录。',
    'audit.older': '更早的记录',
    'audit.newest': '最新',
    'audit.change': '查看改动',
    'audit.before': '之前',
    'audit.after': '之后',
    'settings.title': '插件设置',
    'settings.note': '保存在数据库中，立即生效，无需重启。',
    'settings.source.default': '未在此设置',
    'settings.source.env': '来自环境变量',
    'settings.source.page': '在此设置',
    'settings.default': '默认 {value}',
    'settings.range': '{min}–{max}',
    'settings.unchanged': '没有改动。',
    'settings.invalid': '有些值无效。',
    'confirm.retry.title': '重试任务 {id}？',
    'confirm.retry.body': '它会立即再次运行。重试无法撤销。',
    'confirm.retryAll.title': '重试所有失败的任务？',
    'confirm.retryAll.body': '{n} 个失败的任务会立即再次运行。重试无法撤销。',
    'confirm.retryGo': '重试',
    'confirm.removeImport.title': '移除导入 {id}？',
    'confirm.removeImport.body': '它的事件会被归档，被它取代的内容重新生效。移除导入无法撤销：要恢复，请再次导入该文件。',
    'confirm.removeGo': '移除',
    'merge.preview': '将 {merged} 合并到 {survivor}？',
    'merge.previewNote': '{merged} 会被 {survivor} 取代，其来源移到 {survivor}。撤销（在随后的提示中或审计页）可再将二者拆开。',
    'merge.stays': '保留',
    'merge.goes': '并入其中',
    'merge.confirm': '合并',
    'merge.back': '返回',
    'merge.eligible': '只列出可以合并的事件：有效、未置顶、范围相同。',
    'edit.fieldWhen': '时间（文字或日期）',
    'edit.whenHelp': '按说出的时间（{at}）解读；留空表示没有时间。',
    'edit.fieldTimeStatus': '时间状态',
    'timeStatus.planned': '计划中',
    'timeStatus.occurred': '已发生',
    'timeStatus.ongoing': '进行中',
    'timeStatus.cancelled': '已取消',
    'timeStatus.unknown': '未说明',
    'type.decision': '决定',
    'type.preference': '偏好',
    'type.plan': '计划',
    'type.change': '变更',
    'type.fact': '事实',
    'type.event': '事件',
    'events.scope.session': '会话',
    'origin.remember': '主动记住',
    'origin.extraction': '自动提取',
    'origin.import': '导入',
    'actor.user': '你',
    'actor.agent': '智能体',
    'actor.capture': '捕获',
    'actor.model': '模型',
    'actor.system': '系统',
    'who.user': '你',
    'who.agent': '智能体',
    'who.capture': '捕获',
    'who.model': '模型',
    'who.system': '系统',
    'jobKind.block_summary': '区块摘要',
    'jobKind.event_extraction': '事件提取',
    'jobKind.graph_projection': '图谱更新',
    'jobKind.embedding': '向量化',
    'jobKind.maintenance': '维护',
    'role.user': '用户',
    'role.assistant': '助手',
    'role.tool': '工具',
    'role.system': '系统',
    'source.model': '模型',
    'source.fallback': '规则（无模型）',
    'verdict.sufficient': '充分',
    'verdict.partial': '部分',
    'verdict.wrong': '错误',
    'dense.ready': '就绪',
    'dense.dim': '{n} 维',
    'dense.off': '关闭',
    'dense.disabled': '关闭',
    'dense.loading': '加载中',
    'dense.failed': '失败',
    'dense.unavailable': '不可用',
    'imports.preview': '导入 {file}？',
    'imports.previewCount': '按 {format} 格式读出 {count} 项。',
    'imports.previewShown': '前 {n} 项：',
    'imports.confirm': '添加 {count} 项',
    'imports.warnings': '读取文件时的提示',
    'undid.event.forgotten': '已撤销：遗忘 {id}。它已回到记忆中。',
    'undid.event.restored': '已撤销：恢复 {id}。它再次被遗忘。',
    'undid.event.pinned': '已撤销：置顶 {id}。',
    'undid.event.unpinned': '已撤销：取消置顶 {id}。',
    'undid.event.edited': '已撤销：对 {id} 的编辑。原事件重新生效。',
    'undid.event.merged': '已撤销：{id} 的合并。它重新独立。',
    'undid.event.resolved': '已撤销：{id} 的冲突解决。冲突重新打开。',
    'undid.event.superseded': '已撤销：取代 {id}。',
    'undid.import.created': '已撤销：导入 {id}。其事件已归档。',
    'undid.settings.changed': '已撤销：设置更改。之前的设置重新生效。',
    'audit.s.event.forgotten': '{who}遗忘了 {id} {title}',
    'audit.s.event.restored': '{who}恢复了 {id} {title}',
    'audit.s.event.pinned': '{who}置顶了 {id} {title}',
    'audit.s.event.unpinned': '{who}取消置顶 {id} {title}',
    'audit.s.event.edited': '{who}编辑了 {id} {title}',
    'audit.s.event.merged': '{who}把 {id} {title} 合并到另一个事件',
    'audit.s.event.unmerged': '{who}把 {id} {title} 从合并中拆出',
    'audit.s.event.resolved': '{who}解决了 {id} {title} 的冲突',
    'audit.s.event.superseded': '{who}将 {id} {title} 标为已被取代',
    'audit.s.event.unsuperseded': '{who}让 {id} {title} 重新生效',
    'audit.s.event.disputed': '{who}将 {id} {title} 标为有争议',
    'audit.s.event.settled': '{who}平息了 {id} {title} 的争议',
    'audit.s.event.archived': '{who}归档了 {id} {title}',
    'audit.s.event.erased': '{who}抹除了 {id}',
    'audit.s.event.remember': '{who}记住了 {id} {title}',
    'audit.s.event.extraction': '{who}提取了 {id} {title}',
    'audit.s.event.import': '{who}导入了 {id} {title}',
    'audit.s.event.sources_added': '{who}为 {id} {title} 添加了来源',
    'audit.s.event.suppressed': '{who}拦下了 {id} {title} 的重复表述',
    'audit.s.event.extraction_dropped': '{who}丢弃了提取出的事件 {id}',
    'audit.s.import.created': '{who}导入了 {id}',
    'audit.s.import.removed': '{who}移除了导入 {id}',
    'audit.s.settings.changed': '{who}更改了设置',
    'audit.s.namespace.settings_changed': '{who}更改了此命名空间的设置',
    'audit.s.namespace.deleted': '{who}删除了命名空间 {id}',
    'audit.s.job.retried': '{who}重试了 {id}',
    'audit.s.job.enqueued': '{who}将 {id} 加入队列',
    'audit.s.job.done': '{who}完成了 {id}',
    'audit.s.job.failed': '{who}：{id} 失败',
    'audit.s.job.attempt_failed': '{who}：{id} 的一次尝试失败',
    'audit.s.job.requeued_for_upgrade': '{who}重新排队 {id}，以便用模型重做',
    'audit.s.audit.undone': '{who}撤销了记录 {id}',
    'audit.s.block.sealed': '{who}封存了 {id}',
    'audit.s.block.summarized': '{who}为 {id} 生成了摘要',
    'audit.s.block.summary_fallback': '{who}用规则（无模型）为 {id} 生成了摘要',
    'audit.s.block.events_extracted': '{who}读取了 {id} 中的事件',
    'audit.s.block.expanded': '{who}展开了 {id}',
    'audit.s.fact.asserted': '{who}添加了图谱事实 {id}',
    'audit.s.fact.superseded': '{who}取代了图谱事实 {id}',
    'audit.s.fact.updated': '{who}更新了图谱事实 {id}',
    'audit.s.message.erased': '{who}抹除了消息 {id}',
    'audit.s.evidence.used': '{who}记录了回答依据的内容（{id}）',
    'audit.s.evidence.assessed': '{who}评估了一次检索（{id}）',
    'audit.s.maintenance.run': '{who}运行了维护',
    'audit.s.maintenance.scheduled': '{who}安排了维护',
    'audit.s.fact.active': '{who}让图谱事实 {id} 重新生效',
    'audit.s.fact.archived': '{who}归档了图谱事实 {id}',
    'audit.s.fact.disputed': '{who}将图谱事实 {id} 标为有争议',
    'audit.s.graph.batch_projected': '{who}根据 {id} 更新了图谱',
    'audit.s.turn.captured': '{who}保存了 {id}',
    'audit.s.other': '{who}：{action} {id}',
    'audit.undoneBy': '已撤销（记录 #{id}）',
    'audit.field': '字段',
    'audit.entry': '记录 #{id}',
    'settings.group.memory': '记忆',
    'settings.group.memoryHelp': '对话如何成为记忆，以及一个项目能看到哪些记忆。',
    'settings.group.recall': '召回',
    'settings.group.recallHelp': '每一步放到模型面前的记忆有多少。',
    'settings.group.context': '上下文窗口',
    'settings.group.contextHelp': 'StrataGate 如何让对话保持在模型的上下文窗口之内。',
    'settings.group.team': '团队记忆',
    'settings.group.teamHelp': '通过团队的数据库与团队共享本项目的团队记忆。对话记录和其他一切都留在本机。保存后同步会重新启动。',
    'settings.group.advanced': '高级',
    'settings.group.advancedHelp': '上下文引擎的阈值。上面的模式会设定全部阈值；在这里改动任何一项，模式即变为“自定义”。',
    'settings.choice.project': '按项目',
    'settings.choice.session': '按会话',
    'settings.choice.global': '全部共用一份',
    'settings.choice.auto': '使用模型',
    'settings.choice.none': '不用模型（仅规则）',
    'settings.choice.cost': '节省成本',
    'settings.choice.quality': '最佳质量',
    'settings.choice.custom': '自定义',
    'settings.on': '开启',
    'settings.contextSaved': '上下文设置已保存，从下一轮起生效。',
    'settings.contextUnavailable': '无法读取上下文引擎的设置：{error}',
    'settings.confirmContext': '保存上下文设置？此更改不记入审计，也无法在那里撤销；要还原，请在这里改回原值。',
    'ctx.enabled': "管理上下文窗口",
    'ctx.enabled.help': "关闭时：历史只归档，从不缩短。",
    'ctx.auto_fold': "自动折叠旧的历史",
    'ctx.auto_fold.help': "提醒未被处理时，自动为旧的轮次写简短摘要。",
    'ctx.reminders': "提醒智能体折叠",
    'ctx.reminders.help': "历史变长时告诉智能体。",
    'ctx.cost_aware': "只在省钱时缩短",
    'ctx.cost_aware.help': "只有节省的 token 超过一次性缓存失效的代价时才改动历史。",
    'ctx.mid_turn_cards': "在每一步之前缩短长轮次",
    'ctx.mid_turn_cards.help': "在长轮次中，把已完成的工具轮次换成简短卡片。",
    'ctx.pressure_line': "超过窗口的此比例时，轮次中途也缩短",
    'ctx.force_line': "超过窗口的此比例时总是缩短",
    'ctx.protected_rounds': "原样保留的最近轮次数",
    'ctx.protected_share': "保留的轮次最多占窗口的比例",
    'ctx.card_min_tokens': "小于此值的工具结果保持原样（token）",
    'ctx.price_miss': "未命中缓存的输入 token 价格",
    'ctx.price_hit': "命中缓存的输入 token 价格",
    'ctx.min_batch_tokens': "值得改动的最小节省（token）",
    'ctx.min_batch_share': "值得改动的最小节省（占窗口比例）",
    'ctx.upgrade_factor': "再次折叠所需的最小节省倍数",
    'ctx.max_deferrals': "模型折叠最多可等待的轮次",
    'ctx.requests_min': "每轮预期的最少模型请求数",
    'ctx.requests_max': "每轮预期的最多模型请求数",
    'ctx.reminder_every': "增长这么多后提醒（token）",
    'ctx.reminder_rearm': "再次提醒的间隔（token）",
    'ctx.reminder_rearm_high': "超过“总是缩短”线后，再次提醒的间隔（token）",
    'ctx.digest_line': "提醒之后，超过窗口的此比例时写摘要",
    'ctx.digest_reminders': "写摘要前的提醒次数",
    'ctx.digest_force_line': "无论是否提醒，超过窗口的此比例即写摘要",
    'ctx.digest_cooldown': "两次摘要之间的增长（token）",
    'ctx.digest_target': "折叠到旧历史占窗口的此比例为止",
    'ctx.digest_share': "摘要的大小（占被替换内容的比例）",
    'ctx.digest_min_chars': "值得写摘要的最短文本（字符）",
    'ctx.old_rounds_budget': "旧轮次超过这么多 token 时写摘要（0：从不）",
    'ctx.old_rounds_share': "旧轮次超过窗口的此比例时写摘要",
    'ctx.old_rounds_age': "一个轮次保持原样的轮数",
    'time.s': '{n} 秒',
    'time.min': '{n} 分钟',
    'time.h': '{h} 小时 {m} 分钟',
    'time.d': '{d} 天 {h} 小时',
  }
  const I18N = { en, zh }

  const TABS = ['overview', 'recent', 'longterm', 'graph', 'evidence', 'imports', 'audit', 'settings']
  const EVENT_STATUSES = ['active', 'superseded', 'disputed', 'forgotten', 'archived']
  const IN_MEMORY = 'active,superseded,disputed'
  const ALL_STATUSES = EVENT_STATUSES.join(',')
  // Which areas of GET /changes each tab shows: a change refetches the open tab only when it touches one of them.
  const TAB_AREAS = {
    overview: ['jobs', 'namespaces', 'blocks', 'events', 'graph', 'imports', 'settings'],
    recent: ['blocks'],
    longterm: ['events', 'evidence'],
    graph: ['graph', 'events'],
    evidence: ['evidence'],
    imports: ['imports', 'events'],
    audit: ['audit'],
    settings: ['settings'],
  }
  const PAGE = 50

  // ---------------------------------------------------------------- pure helpers (exported for tests)

  function pickLang(option, navigatorLanguage) {
    if (option === 'en' || option === 'zh') return option
    return String(navigatorLanguage || '').toLowerCase().startsWith('zh') ? 'zh' : 'en'
  }

  function translate(lang, key, vars) {
    const dict = I18N[lang] || I18N.en
    let text = dict[key]
    if (text === undefined) text = I18N.en[key]
    if (text === undefined) text = key
    if (vars) text = text.replace(/\{(\w+)\}/g, (m, name) => (name in vars && vars[name] !== undefined && vars[name] !== null ? String(vars[name]) : m))
    return text
  }

  /** A text the sidecar sends in both languages ({en, zh}, e.g. a setting's label): the page's language, else English. */
  function inLang(text, lang) {
    if (!text || typeof text !== 'object') return typeof text === 'string' ? text : ''
    return text[lang] || text.en || ''
  }

  /** The chip of an event or job status: its class and label, and the successor an event points at. */
  function statusChip(lang, status, successor) {
    const known = translate(lang, 'status.' + status)
    const label = known === 'status.' + status ? String(status) : known
    const chip = { status: String(status), className: 'sgm-chip sgm-chip-' + String(status).replace(/[^a-z_-]/gi, ''), label, successor: null }
    if (status === 'superseded' && successor && successor.id) chip.successor = { id: successor.id, text: '→ ' + successor.id, title: successor.title || '' }
    return chip
  }

  function humanBytes(n) {
    const value = n === null || n === undefined || n === '' ? NaN : Number(n)
    if (!Number.isFinite(value) || value < 0) return '—'
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
    let v = value
    let i = 0
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024
      i++
    }
    return (i === 0 ? String(Math.round(v)) : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)) + ' ' + units[i]
  }

  function humanDuration(lang, seconds) {
    const s = Math.max(0, Math.floor(Number(seconds) || 0))
    if (s < 60) return translate(lang, 'time.s', { n: s })
    if (s < 3600) return translate(lang, 'time.min', { n: Math.floor(s / 60) })
    if (s < 86400) return translate(lang, 'time.h', { h: Math.floor(s / 3600), m: Math.floor((s % 3600) / 60) })
    return translate(lang, 'time.d', { d: Math.floor(s / 86400), h: Math.floor((s % 86400) / 3600) })
  }

  /** An ISO-8601 UTC time as stored, shortened for reading ("2026-12-01 21:30 UTC"); a date stays a date. */
  function shortTime(iso) {
    if (iso === null || iso === undefined || iso === '') return '—'
    const text = String(iso)
    const m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})(:\d{2})?(\.\d+)?(Z|[+-]00:?00)?$/.exec(text)
    if (m) return m[1] + ' ' + m[2] + (m[5] ? ' UTC' : '')
    return text
  }

  /**
   * A stored time in the reader's locale (a date stays a date, read in UTC as stored); `locale` is a BCP 47 tag
   * (the browser's). Anything unreadable is shown as it came.
   */
  function localTime(iso, locale) {
    if (iso === null || iso === undefined || iso === '') return '—'
    const text = String(iso)
    const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(text)
    const when = new Date(dateOnly ? text + 'T00:00:00Z' : text)
    if (Number.isNaN(when.getTime())) return text
    try {
      const style = dateOnly ? { dateStyle: 'medium', timeZone: 'UTC' } : { dateStyle: 'medium', timeStyle: 'short' }
      return new Intl.DateTimeFormat(locale || undefined, style).format(when)
    } catch (e) {
      return shortTime(iso)
    }
  }

  /** The locale dates are written in: the browser's when it speaks the page's language, else that language's. */
  function dateLocale(lang, navigatorLanguage) {
    const nav = String(navigatorLanguage || '')
    if (nav && pickLang(undefined, nav) === lang) return nav
    return lang === 'zh' ? 'zh-CN' : 'en-US'
  }

  /** When the event happened, as one line: a date, a window, "not stated" (in `locale` when given). */
  function happenedText(lang, ev, locale) {
    const fmt = locale ? (x) => localTime(x, locale) : shortTime
    const start = ev && ev.happened_start
    const end = ev && ev.happened_end
    let text
    if (!start && !end) text = translate(lang, 'events.happenedUnknown')
    else if (start && end && start !== end) text = fmt(start) + ' – ' + fmt(end)
    else text = fmt(start || end)
    return text
  }

  /** A date (YYYY-MM-DD) as the reader writes it in `locale`, digits only ("2026/04/15", "15/04/2026"). */
  function dateInputText(iso, locale) {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(String(iso || ''))) return ''
    try {
      return new Intl.DateTimeFormat(locale || undefined, { year: 'numeric', month: '2-digit', day: '2-digit', timeZone: 'UTC' }).format(new Date(iso + 'T00:00:00Z'))
    } catch (e) {
      return String(iso)
    }
  }

  /**
   * A date typed in the reader's locale order (or as YYYY-MM-DD) → YYYY-MM-DD, or null when it is no date. The
   * browser's own date picker is not used: Chromium shows it in its UI language's order, not the page's.
   */
  function parseDateInput(text, locale) {
    const t = String(text || '').trim()
    let y, m, d
    const iso = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(t)
    if (iso) [y, m, d] = [iso[1], iso[2], iso[3]].map(Number)
    else {
      const nums = t.match(/\d+/g)
      if (!nums || nums.length !== 3) return null
      let order = ['year', 'month', 'day']
      try {
        order = new Intl.DateTimeFormat(locale || undefined, { year: 'numeric', month: '2-digit', day: '2-digit', timeZone: 'UTC' }).formatToParts(new Date(Date.UTC(2026, 3, 15))).map((p) => p.type).filter((x) => x === 'year' || x === 'month' || x === 'day')
      } catch (e) {
        /* keep year-month-day */
      }
      const at = (k) => Number(nums[order.indexOf(k)])
      ;[y, m, d] = [at('year'), at('month'), at('day')]
    }
    const date = new Date(Date.UTC(y, m - 1, d))
    if (!(y >= 1000 && y <= 9999) || date.getUTCMonth() !== m - 1 || date.getUTCDate() !== d) return null
    return String(y).padStart(4, '0') + '-' + String(m).padStart(2, '0') + '-' + String(d).padStart(2, '0')
  }

  /** A value's label from the dictionary (`prefix` + value), or null when the dictionary has none. */
  function knownLabel(lang, prefix, value) {
    const key = prefix + String(value)
    const text = translate(lang, key)
    return text === key ? null : text
  }

  /**
   * Before/after of an audit entry as rows {field, before, after} for the fields that differ (nested objects
   * flattened with dots; values as compact text). Neither side an object: one row named "".
   */
  function changeRows(before, after) {
    const flat = (value, prefix, out) => {
      if (value && typeof value === 'object' && !Array.isArray(value)) {
        for (const [k, v] of Object.entries(value)) flat(v, prefix ? prefix + '.' + k : k, out)
      } else if (prefix) out[prefix] = value
      return out
    }
    const isObj = (v) => v && typeof v === 'object' && !Array.isArray(v)
    if (!isObj(before) && !isObj(after)) return before === after ? [] : [{ field: '', before: before === undefined ? null : before, after: after === undefined ? null : after }]
    const a = flat(isObj(before) ? before : {}, '', {})
    const b = flat(isObj(after) ? after : {}, '', {})
    const rows = []
    for (const field of Array.from(new Set([...Object.keys(a), ...Object.keys(b)]))) {
      const x = field in a ? a[field] : null
      const y = field in b ? b[field] : null
      if (JSON.stringify(x) !== JSON.stringify(y)) rows.push({ field, before: x, after: y })
    }
    return rows
  }

  /** What a GET /changes answer asks of the page: refetch the open tab? reload the namespace list? */
  function refetchPlan(tab, changed) {
    const areas = new Set(changed || [])
    const wanted = TAB_AREAS[tab] || []
    return { tab: wanted.some((a) => areas.has(a)), namespaces: areas.has('namespaces') }
  }

  /** A 400 body's pydantic details as {field: message}; `_` holds the error line when no field is named. */
  function fieldErrors(body, fields) {
    const out = {}
    const names = new Set(fields || [])
    const details = body && Array.isArray(body.details) ? body.details : []
    for (const d of details) {
      const loc = Array.isArray(d && d.loc) ? d.loc.map(String) : []
      const name = loc.slice().reverse().find((p) => names.has(p))
      const msg = String((d && d.msg) || '')
      if (name) out[name] = out[name] ? out[name] + '; ' + msg : msg
      else out._ = out._ ? out._ + '; ' + msg : msg
    }
    // A route's own refusal names its field in an object: {setting: "block_turns"} or {field: "confirm"}.
    const named = body && body.details && !Array.isArray(body.details) && typeof body.details === 'object' ? body.details.setting || body.details.field : null
    if (named && names.has(String(named))) out[String(named)] = String(body.error || '')
    else if (!details.length && body && body.error) out._ = String(body.error)
    return out
  }

  function queryString(params) {
    const parts = []
    for (const [k, v] of Object.entries(params || {})) {
      if (v === undefined || v === null || v === '') continue
      parts.push(encodeURIComponent(k) + '=' + encodeURIComponent(String(v)))
    }
    return parts.join('&')
  }

  function nodeKey(node) {
    return String(node && node.id !== undefined ? node.id : node)
  }

  /**
   * A deterministic force layout (Fruchterman–Reingold from a circle, fixed cooling, no randomness): the same nodes
   * and edges give the same positions whatever their order. Returns {key: {x, y}} inside the margin box.
   */
  function layoutGraph(nodes, edges, opts) {
    const o = opts || {}
    const width = o.width || 800
    const height = o.height || 500
    const margin = o.margin === undefined ? 48 : o.margin
    const iterations = o.iterations || 160
    const keys = Array.from(new Set((nodes || []).map(nodeKey))).sort()
    const pos = {}
    const n = keys.length
    if (!n) return pos
    const cx = width / 2
    const cy = height / 2
    if (n === 1) {
      pos[keys[0]] = { x: cx, y: cy }
      return pos
    }
    const rx = Math.max(10, width / 2 - margin)
    const ry = Math.max(10, height / 2 - margin)
    keys.forEach((key, i) => {
      const a = (2 * Math.PI * i) / n - Math.PI / 2
      pos[key] = { x: cx + rx * Math.cos(a), y: cy + ry * Math.sin(a) }
    })
    const links = (edges || [])
      .map((e) => [String(e.source), String(e.target)])
      .filter(([s, t]) => s !== t && s in pos && t in pos)
      .map(([s, t]) => (s < t ? s + '\u0000' + t : t + '\u0000' + s))
    const pairs = Array.from(new Set(links)).sort().map((p) => p.split('\u0000'))
    const k = 0.75 * Math.sqrt(((width - 2 * margin) * (height - 2 * margin)) / n)
    let temperature = Math.min(width, height) / 8
    for (let it = 0; it < iterations; it++) {
      const disp = keys.map(() => ({ x: 0, y: 0 }))
      const index = {}
      keys.forEach((key, i) => (index[key] = i))
      for (let i = 0; i < n; i++) {
        for (let j = i + 1; j < n; j++) {
          const a = pos[keys[i]]
          const b = pos[keys[j]]
          let dx = a.x - b.x
          let dy = a.y - b.y
          let d = Math.hypot(dx, dy)
          if (d < 0.01) {
            dx = 0.01 * (j - i)
            dy = 0.01
            d = Math.hypot(dx, dy)
          }
          const f = (k * k) / d
          disp[i].x += (dx / d) * f
          disp[i].y += (dy / d) * f
          disp[j].x -= (dx / d) * f
          disp[j].y -= (dy / d) * f
        }
      }
      for (const [s, t] of pairs) {
        const i = index[s]
        const j = index[t]
        const dx = pos[s].x - pos[t].x
        const dy = pos[s].y - pos[t].y
        const d = Math.max(0.01, Math.hypot(dx, dy))
        const f = (d * d) / k
        disp[i].x -= (dx / d) * f
        disp[i].y -= (dy / d) * f
        disp[j].x += (dx / d) * f
        disp[j].y += (dy / d) * f
      }
      // A pull to the centre (a weak spring to an invisible hub) keeps unlinked nodes from drifting to the walls.
      for (let i = 0; i < n; i++) {
        const p = pos[keys[i]]
        const gd = Math.hypot(cx - p.x, cy - p.y)
        if (gd > 0.01) {
          disp[i].x += ((cx - p.x) / gd) * ((gd * gd) / k) * 0.4
          disp[i].y += ((cy - p.y) / gd) * ((gd * gd) / k) * 0.4
        }
        const d = Math.hypot(disp[i].x, disp[i].y)
        if (d > 0) {
          const step = Math.min(d, temperature)
          p.x += (disp[i].x / d) * step
          p.y += (disp[i].y / d) * step
        }
        p.x = Math.min(width - margin, Math.max(margin, p.x))
        p.y = Math.min(height - margin, Math.max(margin, p.y))
      }
      temperature = Math.max(1, temperature * 0.96)
    }
    for (const key of keys) pos[key] = { x: Math.round(pos[key].x * 10) / 10, y: Math.round(pos[key].y * 10) / 10 }
    return pos
  }

  /** The job queue's own bookkeeping (enqueued, done, scheduled…): hidden in the audit unless asked; a user's retry stays. */
  function isBookkeeping(entry) {
    return !!entry && entry.actor === 'system' && /^(job|maintenance)\./.test(String(entry.action || ''))
  }

  /** Messages in the order they were said: by turn, then by their id's number (ids grow with capture order). */
  function byMessageOrder(a, b) {
    const n = (m) => Number(/^msg_(\d+)$/.exec(String(m && m.id))?.[1] ?? Number.MAX_SAFE_INTEGER)
    return (Number(a.turn) || 0) - (Number(b.turn) || 0) || n(a) - n(b)
  }

  /** The dense-search status in one line: its state and model, else the object as compact JSON. */
  function denseLine(dense) {
    if (!dense || typeof dense !== 'object') return String(dense === undefined || dense === null ? '—' : dense)
    const parts = [dense.state, dense.model, dense.dim ? dense.dim + 'd' : null].filter((x) => x !== undefined && x !== null && x !== '')
    return parts.length ? parts.join(' · ') : JSON.stringify(dense)
  }

  /**
   * Team memory's sync in lines (system.info's `team`): on or off, the member and the server (never its password:
   * the sidecar sends host, port and database only), what is not pushed or not pulled yet, the last error.
   */
  function teamLines(team, T) {
    if (!team || !team.enabled) return [T('team.off')]
    const lines = [T('team.on', { member: team.member || '—', server: team.server || '—' })]
    const behind = Object.entries(team.behind || {}).filter(([, n]) => n > 0)
    if (team.outbox > 0) lines.push(T('team.outbox', { n: team.outbox }))
    for (const [project, n] of behind) lines.push(T('team.behind', { project, n }))
    if (!(team.outbox > 0) && !behind.length && team.connected) lines.push(T('team.synced'))
    if (team.last_error) lines.push(T('team.error', { error: team.last_error }))
    return lines
  }

  /** How far a node label centred under x must move so its (estimated) width stays inside the canvas. */
  function labelShift(text, x, width) {
    let w = 0
    for (const ch of String(text)) w += ch.codePointAt(0) >= 0x2e80 ? 12.5 : 7.2
    const half = Math.min(width / 2, w / 2 + 4)
    if (x - half < 0) return Math.round(half - x)
    if (x + half > width) return Math.round(width - half - x)
    return 0
  }

  /**
   * The audit id an action's Undo reverses. A compound action (an edit, a resolve) writes several entries and only its
   * anchor is undoable: the one the audit lists with an `undo` label. `entries` are GET /audit entries (any order).
   */
  function undoTarget(result, entries) {
    if (result && Number.isInteger(result.undo_audit_id)) return result.undo_audit_id
    const ids = new Set(result && Array.isArray(result.audit_ids) ? result.audit_ids : [])
    const undoable = (entries || []).filter((e) => ids.has(e.id) && e.undo).map((e) => e.id)
    return undoable.length ? Math.max(...undoable) : null
  }

  function todayUtc(now) {
    return (now || new Date()).toISOString().slice(0, 10)
  }

  function compactJson(value) {
    if (value === null || value === undefined) return '—'
    if (typeof value === 'string') return value
    try {
      return JSON.stringify(value, null, 2)
    } catch (e) {
      return String(value)
    }
  }

  // ---------------------------------------------------------------- the page

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.error) || 'HTTP ' + status)
      this.status = status
      this.body = body
    }
  }

  function injectCss(doc, api) {
    if (doc.querySelector('link[data-sgm-css]')) return
    const link = doc.createElement('link')
    link.rel = 'stylesheet'
    link.href = api + '/assets/memory-page.css'
    link.setAttribute('data-sgm-css', '')
    ;(doc.head || doc.documentElement).appendChild(link)
  }

  function mount(element, options) {
    const opts = options || {}
    const doc = element.ownerDocument || document
    const win = doc.defaultView || root
    const api = String(opts.api || '/api/stratagate/memory').replace(/\/+$/, '')
    const lang = pickLang(opts.lang, win.navigator && win.navigator.language)
    const T = (key, vars) => translate(lang, key, vars)
    const locale = dateLocale(lang, win.navigator && win.navigator.language)
    const when = (iso) => localTime(iso, locale)
    /** A value's label (`prefix` + value in the dictionary), else the value itself, marked as data (not UI text). */
    const label = (prefix, value) => {
      if (value === null || value === undefined || value === '') return ''
      const known = knownLabel(lang, prefix, value)
      return known === null ? data(String(value)) : known
    }
    /** A translated sentence whose {slots} may be nodes (an id as <code>, a link button): a list of strings and nodes. */
    const Tn = (key, vars) => {
      const text = translate(lang, key)
      const out = []
      let last = 0
      text.replace(/\{(\w+)\}/g, (m, name, at) => {
        const v = vars && vars[name]
        out.push(text.slice(last, at), v === undefined || v === null ? m : typeof v === 'object' ? v : String(v))
        last = at + m.length
        return m
      })
      out.push(text.slice(last))
      return out.filter((x) => x !== '')
    }
    injectCss(doc, api)

    const ctl = new AbortController()
    const state = { tab: 'overview', namespace: null, namespaces: [], cursor: null, stopped: false, tabView: null, live: true }
    const timers = new Set()
    let uid = 0
    const nextId = (p) => 'sgm-' + p + '-' + ++uid

    // ---- DOM helpers: children are nodes or plain strings (text nodes); no markup parsing anywhere.
    function el(tag, props, ...children) {
      const node = doc.createElement(tag)
      return fill(node, props, children)
    }
    function svg(tag, props, ...children) {
      const node = doc.createElementNS('http://www.w3.org/2000/svg', tag)
      return fill(node, props, children)
    }
    function fill(node, props, children) {
      for (const [k, v] of Object.entries(props || {})) {
        if (v === undefined || v === null || v === false) continue
        if (k === 'class') node.setAttribute('class', v)
        else if (k === 'testid') node.setAttribute('data-testid', v)
        else if (k === 'data') for (const [dk, dv] of Object.entries(v)) node.setAttribute('data-' + dk, String(dv))
        else if (k === 'on') for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn)
        else if (k === 'text') node.textContent = String(v)
        else if (k === 'value' || k === 'checked' || k === 'disabled' || k === 'selected') node[k] = v
        else node.setAttribute(k, v === true ? '' : String(v))
      }
      append(node, children)
      return node
    }
    function append(node, children) {
      for (const c of children.flat(Infinity)) {
        if (c === null || c === undefined || c === false) continue
        node.appendChild(typeof c === 'string' || typeof c === 'number' ? doc.createTextNode(String(c)) : c)
      }
      return node
    }
    function clear(node) {
      while (node.firstChild) node.removeChild(node.firstChild)
      return node
    }
    // Ids stay on one line; only long values (paths, JSON) may wrap anywhere.
    const code = (text, long) => el('code', { class: long ? 'sgm-code sgm-code-long' : 'sgm-code', translate: 'no' }, String(text === null || text === undefined ? '—' : text))
    // What the user or the memory wrote (titles, quotes, names): shown as it is, never translated (translate="no";
    // the Chinese page's test skips it when it looks for English UI text).
    function data(text, tag, props) {
      return el(tag || 'span', Object.assign({ translate: 'no' }, props || {}), text === null || text === undefined ? '' : String(text))
    }
    const button = (label, props) => el('button', Object.assign({ type: 'button', class: 'sgm-btn' }, props || {}), label)
    function chip(status, successor, onSuccessor) {
      const c = statusChip(lang, status, successor)
      const parts = [el('span', { class: c.className, testid: 'status-chip', data: { status: c.status } }, c.label)]
      if (c.successor) {
        parts.push(
          button(c.successor.text, {
            class: 'sgm-link sgm-successor',
            testid: 'successor-link',
            data: { 'event-id': c.successor.id },
            title: T('events.supersededBy') + ' ' + c.successor.id + (c.successor.title ? ': ' + c.successor.title : ''),
            on: { click: (e) => (e.stopPropagation(), onSuccessor && onSuccessor(c.successor.id)) },
          }),
        )
      }
      return parts
    }
    function timeEl(iso) {
      return el('time', { datetime: iso || undefined, title: iso || undefined }, when(iso))
    }
    function section(title, ...children) {
      return el('section', { class: 'sgm-card' }, el('h3', { class: 'sgm-h' }, title), ...children)
    }
    function table(headers, rows, props) {
      const wrap = el(
        'div',
        { class: 'sgm-table-wrap' },
        el('table', Object.assign({ class: 'sgm-table' }, props || {}), el('thead', {}, el('tr', {}, headers.map((h) => el('th', { scope: 'col' }, h)))), el('tbody', {}, rows)),
      )
      // Each cell carries its column name: on a narrow screen the CSS stacks a row into labelled lines.
      for (const row of rows) Array.from(row.children).forEach((td, i) => headers[i] && td.setAttribute('data-label', headers[i]))
      return wrap
    }
    function pager(total, offset, limit, go) {
      if (!total || total <= limit) return null
      return el(
        'div',
        { class: 'sgm-pager' },
        button(T('app.previous'), { disabled: offset <= 0, on: { click: () => go(Math.max(0, offset - limit)) } }),
        el('span', {}, T('app.range', { from: offset + 1, to: Math.min(total, offset + limit), total })),
        button(T('app.more'), { disabled: offset + limit >= total, on: { click: () => go(offset + limit) } }),
      )
    }
    function errorBox(err, retry) {
      return el('div', { class: 'sgm-error', role: 'alert' }, T('app.error', { error: err.message || String(err) }), retry ? button(T('app.retry'), { on: { click: retry } }) : null)
    }
    function loading() {
      return el('p', { class: 'sgm-muted' }, T('app.loading'))
    }
    function later(fn, ms) {
      const id = win.setTimeout(() => (timers.delete(id), fn()), ms)
      timers.add(id)
      return id
    }
    function pause(ms) {
      return new Promise((resolve) => {
        const id = later(resolve, ms)
        ctl.signal.addEventListener('abort', () => (win.clearTimeout(id), resolve()), { once: true })
      })
    }

    // ---- HTTP
    async function call(verb, path, params) {
      let url = api + path
      const init = { method: verb, headers: { accept: 'application/json' }, signal: ctl.signal, credentials: 'same-origin' }
      if (verb === 'GET') {
        const qs = queryString(params)
        if (qs) url += '?' + qs
      } else {
        init.headers['content-type'] = 'application/json'
        init.body = JSON.stringify(params || {})
      }
      const res = await win.fetch(url, init)
      const text = await res.text()
      let body = null
      try {
        body = text ? JSON.parse(text) : null
      } catch (e) {
        body = { error: text.slice(0, 300) }
      }
      if (!res.ok) throw new ApiError(res.status, body)
      return body
    }
    const get = (path, params) => call('GET', path, params)
    const post = (path, body) => call('POST', path, body)

    // ---- toasts: status after an action, with Undo when the action can be reversed
    function toast(message, opt) {
      const o = opt || {}
      const item = el('div', { class: 'sgm-toast' + (o.error ? ' sgm-toast-error' : ''), testid: 'toast', role: o.error ? 'alert' : 'status' }, el('span', {}, message))
      if (o.undo) {
        item.appendChild(
          button(T('action.undo'), {
            class: 'sgm-btn sgm-btn-small',
            testid: 'toast-undo',
            data: { 'audit-id': o.undo },
            on: {
              click: async (e) => {
                e.currentTarget.disabled = true
                await undo(o.undo)
                item.remove()
              },
            },
          }),
        )
      }
      item.appendChild(button('×', { class: 'sgm-btn sgm-btn-small sgm-btn-ghost', 'aria-label': T('app.close'), on: { click: () => item.remove() } }))
      toasts.appendChild(item)
      while (toasts.children.length > 4) toasts.removeChild(toasts.firstChild)
      later(() => item.remove(), o.undo ? 15000 : o.error ? 12000 : 6000)
    }
    async function undo(auditId) {
      try {
        const r = await post('/undo', { namespace: state.namespace, audit_id: auditId })
        // The entry undone names the toast ("Undone: Forget evt_2"), never the undo's own label ("Restore evt_2").
        const named = r && r.action ? knownLabel(lang, 'undid.', r.action) : null
        toast(named ? translate(lang, 'undid.' + r.action, { id: r.subject_id || '' }) : T('action.undone'))
        refreshTab()
      } catch (err) {
        toast(T('action.failed', { error: err.message }), { error: true })
      }
    }
    /** Which entry of a write Undo would reverse: asked of GET /audit (it labels what page.undo can reverse). */
    async function findUndo(result) {
      const ids = result && Array.isArray(result.audit_ids) ? result.audit_ids.filter(Number.isInteger) : []
      if (result && Number.isInteger(result.undo_audit_id)) return result.undo_audit_id
      if (!ids.length || !state.namespace) return null
      try {
        const d = await get('/audit', { namespace: state.namespace, before_id: Math.max(...ids) + 1, limit: Math.min(200, ids.length + 10) })
        return undoTarget(result, d.entries)
      } catch (err) {
        return null
      }
    }
    /** A write: POST, then a toast (with Undo when the audit can reverse it), then the open tab refetched. */
    async function act(path, body, message) {
      try {
        const result = await post(path, body)
        const text = typeof message === 'function' ? message(result) : message
        toast(text, { undo: await findUndo(result) })
        refreshTab()
        return result
      } catch (err) {
        toast(T('action.failed', { error: err.message }), { error: true })
        throw err
      }
    }

    // ---- dialogs: modal, focus kept inside, Escape closes, focus returns to the opener
    function dialog(title, build, onClose) {
      const opener = doc.activeElement
      const titleId = nextId('dlg')
      const box = el('div', { class: 'sgm-dialog', role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': titleId, testid: 'dialog' })
      const overlay = el('div', { class: 'sgm-overlay sgm-root', lang }, box)
      const close = () => {
        overlay.remove()
        dialogs.delete(overlay)
        if (onClose) onClose()
        if (opener && opener.isConnected && opener.focus) opener.focus()
      }
      box.appendChild(el('h3', { class: 'sgm-h', id: titleId }, title))
      build(box, close)
      overlay.addEventListener('keydown', (e) => {
        if (e.key === 'Escape') {
          e.preventDefault()
          close()
        } else if (e.key === 'Tab') {
          const f = Array.from(box.querySelectorAll('button, input, select, textarea, [tabindex="0"]')).filter((n) => !n.disabled)
          if (!f.length) return
          const first = f[0]
          const last = f[f.length - 1]
          if (e.shiftKey && doc.activeElement === first) {
            e.preventDefault()
            last.focus()
          } else if (!e.shiftKey && doc.activeElement === last) {
            e.preventDefault()
            first.focus()
          }
        }
      })
      overlay.addEventListener('mousedown', (e) => e.target === overlay && close())
      doc.body.appendChild(overlay)
      dialogs.add(overlay)
      const focusable = box.querySelector('input, textarea, select, button:not(.sgm-btn-ghost)')
      if (focusable) focusable.focus()
      return close
    }
    const dialogs = new Set()
    /** Ask before a write that cannot be undone: resolves true when the user confirms, false on cancel or Escape. */
    function confirmFirst(title, body, goLabel) {
      return new Promise((resolve) => {
        let answered = false
        const answer = (yes, close) => {
          if (answered) return
          answered = true
          close()
          resolve(yes)
        }
        dialog(title, (box, close) => {
          const go = button(goLabel, { class: 'sgm-btn sgm-btn-danger', testid: 'confirm-ok', on: { click: () => answer(true, close) } })
          append(box, [el('p', {}, body), el('div', { class: 'sgm-actions' }, go, button(T('app.cancel'), { testid: 'dialog-cancel', on: { click: () => answer(false, close) } }))])
        }, () => {
          if (!answered) {
            answered = true
            resolve(false)
          }
        })
      })
    }

    // ---- skeleton
    const rootEl = el('div', { class: 'sgm-root', lang })
    const nsSelect = el('select', { testid: 'namespace-select', id: nextId('ns'), on: { change: () => selectNamespace(nsSelect.value) } })
    const liveDot = el('span', { class: 'sgm-live', title: T('app.live') }, T('app.live'))
    const header = el(
      'header',
      { class: 'sgm-header' },
      el('h2', { class: 'sgm-title' }, T('app.title')),
      el('div', { class: 'sgm-ns' }, el('label', { for: nsSelect.id }, T('app.namespace')), nsSelect),
      el(
        'div',
        { class: 'sgm-header-actions' },
        button(T('export.json'), { testid: 'export-json', on: { click: () => exportNs('json') } }),
        button(T('export.markdown'), { testid: 'export-markdown', on: { click: () => exportNs('markdown') } }),
        button(T('delete.button'), { class: 'sgm-btn sgm-btn-danger', testid: 'delete-namespace', on: { click: () => deleteNs() } }),
        liveDot,
      ),
    )
    const tablist = el('div', { class: 'sgm-tabs', role: 'tablist', 'aria-label': T('tabs.label') })
    const panel = el('div', { class: 'sgm-panel', role: 'tabpanel', id: nextId('panel'), tabindex: '0' })
    // On a narrow page (DSH's settings on a phone) the tabs collapse into this menu: the same sections, one select.
    const tabMenuSelect = el('select', { id: nextId('menu'), testid: 'tab-menu', on: { change: () => showTab(tabMenuSelect.value) } }, TABS.map((name) => el('option', { value: name }, T('tab.' + name))))
    const tabMenu = el('div', { class: 'sgm-tab-menu' }, el('label', { for: tabMenuSelect.id }, T('tabs.menu')), tabMenuSelect)
    const toasts = el('div', { class: 'sgm-toasts', 'aria-live': 'polite' })
    const tabButtons = {}
    for (const name of TABS) {
      const b = el(
        'button',
        {
          type: 'button',
          role: 'tab',
          class: 'sgm-tab',
          id: nextId('tab'),
          testid: 'tab-' + name,
          'aria-controls': panel.id,
          'aria-selected': 'false',
          tabindex: '-1',
          on: { click: () => showTab(name) },
        },
        T('tab.' + name),
      )
      tabButtons[name] = b
      tablist.appendChild(b)
    }
    tablist.addEventListener('keydown', (e) => {
      const names = TABS
      const current = names.findIndex((n) => tabButtons[n] === doc.activeElement)
      if (current < 0) return
      let next = null
      if (e.key === 'ArrowRight' || e.key === 'ArrowDown') next = (current + 1) % names.length
      else if (e.key === 'ArrowLeft' || e.key === 'ArrowUp') next = (current - 1 + names.length) % names.length
      else if (e.key === 'Home') next = 0
      else if (e.key === 'End') next = names.length - 1
      if (next === null) return
      e.preventDefault()
      for (const n of names) tabButtons[n].setAttribute('tabindex', '-1')
      tabButtons[names[next]].setAttribute('tabindex', '0')
      tabButtons[names[next]].focus()
    })
    append(rootEl, [header, tablist, tabMenu, panel, toasts])
    element.appendChild(rootEl)

    // ---- namespaces
    function renderNamespaces() {
      clear(nsSelect)
      for (const ns of state.namespaces) nsSelect.appendChild(el('option', { value: ns.name, selected: ns.name === state.namespace, translate: 'no' }, ns.name))
      nsSelect.disabled = !state.namespaces.length
      for (const b of header.querySelectorAll('.sgm-header-actions .sgm-btn')) b.disabled = !state.namespace
    }
    function adoptNamespaces(list) {
      state.namespaces = Array.isArray(list) ? list : []
      const names = state.namespaces.map((n) => n.name)
      if (!names.includes(state.namespace)) {
        const preferred = opts.namespace && names.includes(opts.namespace) ? opts.namespace : null
        const byRecent = state.namespaces.slice().sort((a, b) => String(b.last_turn_at || '').localeCompare(String(a.last_turn_at || '')))
        state.namespace = preferred || (byRecent[0] && byRecent[0].name) || null
      }
      renderNamespaces()
    }
    async function loadNamespaces() {
      const ov = await get('/overview')
      adoptNamespaces(ov.namespaces)
      return ov
    }
    function selectNamespace(name) {
      state.namespace = name
      renderNamespaces()
      showTab(state.tab, true)
    }

    // ---- tabs
    function showTab(name, force) {
      if (!force && state.tab === name && state.tabView) return
      state.tab = name
      for (const n of TABS) {
        const on = n === name
        tabButtons[n].setAttribute('aria-selected', on ? 'true' : 'false')
        tabButtons[n].setAttribute('tabindex', on ? '0' : '-1')
        tabButtons[n].classList.toggle('sgm-tab-on', on)
      }
      tabMenuSelect.value = name
      panel.setAttribute('aria-labelledby', tabButtons[name].id)
      if (state.tabView) state.tabView.alive = false
      clear(panel)
      const view = { alive: true, name, refresh: async () => {}, busy: false, again: false }
      state.tabView = view
      const needsNs = name !== 'settings' && name !== 'overview'
      if (needsNs && !state.namespace) {
        panel.appendChild(el('p', { class: 'sgm-muted' }, T('app.noNamespace')))
        return
      }
      VIEWS[name](view, panel)
      refreshTab()
    }
    /** Refetch the open tab; a request while one runs is folded into one more run after it. */
    async function refreshTab() {
      const view = state.tabView
      if (!view || !view.alive) return
      if (view.busy) {
        view.again = true
        return
      }
      view.busy = true
      const focus = focusKey()
      try {
        do {
          view.again = false
          await view.refresh()
        } while (view.again && view.alive && !state.stopped)
      } finally {
        view.busy = false
      }
      if (view.alive) restoreFocus(focus)
    }
    // A refetch rebuilds the panel: keep the keyboard user's place (the same control, or its counterpart after a
    // toggle: Forget becomes Restore) instead of dropping focus to <body>.
    const COUNTERPART = { 'event-forget': 'event-restore', 'event-restore': 'event-forget' }
    function focusKey() {
      const a = doc.activeElement
      if (!a || !panel.contains(a) || !a.getAttribute('data-testid')) return null
      const attrs = ['data-event-id', 'data-block-id', 'data-level', 'data-session', 'data-message-id', 'data-audit-id', 'data-import-id', 'data-job-id', 'data-node', 'data-fact-id']
      const scope = a.closest('[data-testid="event-detail"], [data-testid="block-item"]')
      return { testid: a.getAttribute('data-testid'), attrs: attrs.filter((n) => a.hasAttribute(n)).map((n) => [n, a.getAttribute(n)]), scope: scope ? scope.getAttribute('data-testid') : null }
    }
    function restoreFocus(key) {
      if (!key || (doc.activeElement && doc.activeElement !== doc.body && panel.contains(doc.activeElement))) return
      const match = (testid) => Array.from(panel.querySelectorAll('[data-testid="' + testid + '"]')).find((n) => key.attrs.every(([k, v]) => n.getAttribute(k) === v))
      const target = match(key.testid) || (COUNTERPART[key.testid] && match(COUNTERPART[key.testid])) || (key.scope && panel.querySelector('[data-testid="' + key.scope + '"]'))
      if (target && target.focus) {
        if (!target.hasAttribute('tabindex') && !/^(BUTTON|INPUT|SELECT|TEXTAREA|A)$/.test(target.tagName)) target.setAttribute('tabindex', '-1')
        target.focus({ preventScroll: true })
      }
    }
    /** Run a fetch for a view; its result is dropped if the view was replaced meanwhile. */
    async function fetchFor(view, target, fn, render) {
      try {
        const data = await fn()
        if (!view.alive) return null
        clear(target)
        render(data)
        return data
      } catch (err) {
        if (!view.alive || state.stopped) return null
        clear(target)
        target.appendChild(errorBox(err, () => refreshTab()))
        return null
      }
    }

    // ---------------------------------------------------------------- Overview
    const VIEWS = {}
    /** The dense-search state in words, its model and size as data. */
    function denseView(dense) {
      if (!dense || typeof dense !== 'object') return data(denseLine(dense))
      return [dense.state ? label('dense.', dense.state) : null, dense.model ? [' · ', code(dense.model)] : null, dense.dim ? ' · ' + T('dense.dim', { n: dense.dim }) : null]
    }
    /** A line with the option and variable names it tells the user to set as code (never translated nor broken). */
    const optionNames = (line) => String(line).split(/(teamDsn|teamMember|STRATAGATE_[A-Z_]+)/).map((part, i) => (i % 2 ? code(part) : part))
    /** The DSH this sidecar runs in and the sidecar's verdict on it (dsh/host.py); nothing for `stratagate ui`. */
    const hostRow = (h) => {
      if (!h || h.verdict === 'standalone') return null
      const words = { dsh: h.dsh, cordis: h.cordis, pinned: h.pinned_cordis, supported: (h.supported_dsh || []).join(', ') }
      return [
        el('dt', {}, T('overview.host')),
        el('dd', { class: h.supported === false ? 'sgm-warn' : 'sgm-muted', testid: 'host-check', data: { verdict: h.verdict } }, T('overview.host.' + h.verdict, words)),
      ]
    }
    VIEWS.overview = (view, host) => {
      const body = el('div', { class: 'sgm-overview' }, loading())
      host.appendChild(body)
      view.refresh = () =>
        fetchFor(view, body, () => get('/overview'), (ov) => {
          adoptNamespaces(ov.namespaces)
          const storage = ov.storage || {}
          const mode = ov.model_mode === 'none' ? T('overview.modelMode.none') : T('overview.modelMode.auto')
          const health = section(
            T('overview.health'),
            el(
              'dl',
              { class: 'sgm-dl' },
              el('dt', {}, T('overview.version')),
              el('dd', {}, code(ov.version)),
              el('dt', {}, T('overview.uptime')),
              el('dd', {}, humanDuration(lang, ov.uptime_s)),
              el('dt', {}, T('overview.db')),
              el('dd', {}, code(ov.db_path, true)),
              el('dt', {}, T('overview.storage')),
              el('dd', { testid: 'storage-size' }, T('overview.storageValue', { db: humanBytes(storage.db_bytes), wal: humanBytes(storage.wal_bytes) })),
              el('dt', {}, T('overview.schema')),
              el('dd', {}, String(ov.schema_version === undefined ? '—' : ov.schema_version)),
              el('dt', {}, T('overview.model')),
              el('dd', {}, mode),
              el('dt', {}, T('overview.modelRoute')),
              el('dd', { testid: 'model-route' }, code(ov.model_route || '—', true)),
              ov.dense ? [el('dt', {}, T('overview.dense')), el('dd', { title: compactJson(ov.dense) }, denseView(ov.dense))] : null,
              hostRow(ov.host),
              el('dt', {}, T('overview.team')),
              el('dd', { testid: 'team-status', class: ov.team && ov.team.last_error ? 'sgm-warn' : (ov.team && ov.team.enabled ? '' : 'sgm-muted') },
                teamLines(ov.team, T).map((line, i) => [i ? el('br') : null, optionNames(line)])),
              el('dt', {}, T('overview.lastError')),
              el('dd', { class: ov.last_error ? 'sgm-warn' : 'sgm-muted' }, ov.last_error ? data(typeof ov.last_error === 'string' ? ov.last_error : compactJson(ov.last_error)) : T('overview.noError')),
            ),
          )
          const jobs = ov.jobs || {}
          const counts = el(
            'ul',
            { class: 'sgm-counts' },
            ['queued', 'running', 'scheduled', 'failed', 'done'].map((s) => el('li', { data: { status: s } }, el('span', { class: 'sgm-count' }, String(jobs[s] || 0)), ' ', statusChip(lang, s).label)),
          )
          const failed = Array.isArray(ov.failed_jobs) ? ov.failed_jobs : []
          // A failed job is a card, not a table row: its error wraps inside the card and Retry stays in view
          // however narrow the job queue's column is (a table scrolled sideways hid it).
          const failedRows = failed.map((job) =>
            el(
              'li',
              { class: 'sgm-failed-job', testid: 'failed-job', data: { 'job-id': job.id } },
              el(
                'div',
                { class: 'sgm-failed-head' },
                code(job.id),
                el('span', {}, label('jobKind.', job.kind)),
                el('span', { class: 'sgm-muted' }, T('job.subject') + ' ', code(job.subject || '—')),
                el('span', { class: 'sgm-muted' }, T('job.attempts') + ' ' + String(job.attempts) + ' / ' + String(job.max_attempts)),
                el('span', { class: 'sgm-muted' }, timeEl(job.updated_at)),
                button(T('overview.retry'), {
                  testid: 'retry-job',
                  on: {
                    click: async (e) => {
                      const b = e.currentTarget
                      if (!(await confirmFirst(T('confirm.retry.title', { id: job.id }), T('confirm.retry.body'), T('confirm.retryGo')))) return
                      b.disabled = true
                      act('/jobs/retry', { job: job.id }, (r) => T('overview.retried', { ids: (r.retried || []).join(', ') || job.id })).catch(() => {})
                    },
                  },
                }),
              ),
              el('p', { class: 'sgm-error-text' }, data(job.error || '—')),
            ),
          )
          const jobsCard = section(
            T('overview.jobs'),
            counts,
            el('h4', { class: 'sgm-h4' }, T('overview.failedJobs')),
            failed.length
              ? [
                  el('ul', { class: 'sgm-failed-list' }, failedRows),
                  button(T('overview.retryAll'), {
                    testid: 'retry-all-failed',
                    on: {
                      click: async () => {
                        if (!(await confirmFirst(T('confirm.retryAll.title'), T('confirm.retryAll.body', { n: failed.length }), T('confirm.retryGo')))) return
                        act('/jobs/retry', { status: 'failed' }, (r) => T('overview.retried', { ids: (r.retried || []).join(', ') })).catch(() => {})
                      },
                    },
                  }),
                ]
              : el('p', { class: 'sgm-muted' }, T('overview.noFailed')),
          )
          const nsRows = (ov.namespaces || []).map((ns) => {
            const ev = ns.events || {}
            const bl = ns.blocks || {}
            const im = ns.imports || {}
            return el(
              'tr',
              { testid: 'namespace-row', data: { namespace: ns.name } },
              el('td', {}, code(ns.name), ns.user_tier ? [' ', el('span', { class: 'sgm-badge' }, T('ns.userTier'))] : null),
              el('td', { class: 'sgm-num' }, String(ns.sessions || 0)),
              el('td', { class: 'sgm-num' }, String(ns.turns || 0)),
              el('td', { class: 'sgm-num' }, String(ns.messages || 0)),
              el('td', { class: 'sgm-num' }, String(bl.ready || 0) + ' / ' + String(bl.pending || 0)),
              el(
                'td',
                {},
                el(
                  'span',
                  { class: 'sgm-chips' },
                  EVENT_STATUSES.filter((s) => ev[s]).map((s) => el('span', { class: 'sgm-chip sgm-chip-' + s }, statusChip(lang, s).label + ' ' + ev[s])),
                ),
              ),
              el('td', { class: 'sgm-num' }, String(ns.graph_nodes || 0)),
              el('td', { class: 'sgm-num' }, String(im.active || 0)),
              el('td', {}, timeEl(ns.last_turn_at)),
            )
          })
          const nsCard = section(
            T('overview.namespaces'),
            nsRows.length ? table([T('ns.name'), T('ns.sessions'), T('ns.turns'), T('ns.messages'), T('ns.blocks'), T('ns.events'), T('ns.graph'), T('ns.imports'), T('ns.lastTurn')], nsRows) : el('p', { class: 'sgm-muted' }, T('app.noNamespace')),
          )
          append(body, [el('div', { class: 'sgm-grid2' }, health, jobsCard), nsCard])
        })
    }

    // ---------------------------------------------------------------- Recent memory
    const recentState = { session: null, offset: 0, open: {} }
    VIEWS.recent = (view, host) => {
      const sessionsBox = el('nav', { class: 'sgm-sessions', 'aria-label': T('recent.sessions') }, loading())
      const blocksBox = el('div', { class: 'sgm-blocks' })
      host.appendChild(el('div', { class: 'sgm-split' }, section(T('recent.sessions'), sessionsBox), blocksBox))
      view.refresh = async () => {
        const data = await fetchFor(view, sessionsBox, () => get('/sessions', { namespace: state.namespace }), (d) => {
          const sessions = d.sessions || []
          if (!sessions.some((s) => s.name === recentState.session)) {
            // The session talked in last (a session with no turn yet shows nothing to expand).
            const latest = sessions.filter((x) => x.last_turn_at).sort((a, b) => String(b.last_turn_at).localeCompare(String(a.last_turn_at)))[0]
            recentState.session = latest ? latest.name : sessions.length ? sessions[0].name : null
            recentState.offset = 0
          }
          if (!sessions.length) sessionsBox.appendChild(el('p', { class: 'sgm-muted' }, T('recent.noSessions')))
          sessionsBox.appendChild(
            el(
              'ul',
              { class: 'sgm-list' },
              sessions.map((s) =>
                el(
                  'li',
                  {},
                  button([el('span', { class: 'sgm-strong' }, code(s.name, true)), el('span', { class: 'sgm-muted sgm-small' }, T('recent.sessionMeta', { turns: s.turns || 0, ready: (s.blocks && s.blocks.ready) || 0, pending: (s.blocks && s.blocks.pending) || 0 })), el('span', { class: 'sgm-muted sgm-small' }, when(s.last_turn_at))], {
                    class: 'sgm-item' + (s.name === recentState.session ? ' sgm-item-on' : ''),
                    testid: 'session-item',
                    data: { session: s.name },
                    'aria-current': s.name === recentState.session ? 'true' : undefined,
                    on: {
                      click: () => {
                        recentState.session = s.name
                        recentState.offset = 0
                        refreshTab()
                      },
                    },
                  }),
                ),
              ),
            ),
          )
        })
        if (!data || !view.alive) return
        if (!recentState.session) {
          clear(blocksBox)
          return
        }
        await fetchFor(view, blocksBox, () => get('/blocks', { namespace: state.namespace, session: recentState.session, limit: PAGE, offset: recentState.offset }), (d) => {
          const blocks = d.blocks || []
          const list = el('ol', { class: 'sgm-list sgm-block-list' })
          for (const b of blocks) list.appendChild(el('li', {}, blockItem(view, b)))
          append(blocksBox, [
            el('h3', { class: 'sgm-h' }, Tn('recent.blocks', { session: code(recentState.session, true) })),
            blocks.length ? list : el('p', { class: 'sgm-muted' }, T('recent.noBlocks')),
            pager(d.total, recentState.offset, PAGE, (o) => ((recentState.offset = o), refreshTab())),
          ])
        })
      }
    }
    function blockItem(view, b) {
      const viewBox = el('div', { class: 'sgm-block-view-host' })
      const pending = b.status !== 'ready'
      const tokens = b.tokens || {}
      const levels = el('div', { class: 'sgm-levels', role: 'group', 'aria-label': T('recent.levels') })
      const openLevel = recentState.open[b.id]
      for (let level = 0; level <= 5; level++) {
        const hint = T('recent.levelName.' + level) + (tokens[String(level)] !== undefined ? ' · ' + T('recent.levelHint', { level, tokens: tokens[String(level)] }) : '')
        levels.appendChild(
          button('L' + level, {
            class: 'sgm-btn sgm-btn-small sgm-level' + (level === b.level ? ' sgm-level-current' : ''),
            testid: 'level-button',
            data: { level },
            title: hint,
            'aria-label': 'L' + level + ' ' + hint,
            'aria-pressed': openLevel === level ? 'true' : 'false',
            on: {
              click: () => {
                if (recentState.open[b.id] === level) {
                  delete recentState.open[b.id]
                  clear(viewBox)
                  for (const x of levels.children) x.setAttribute('aria-pressed', 'false')
                  return
                }
                recentState.open[b.id] = level
                for (const x of levels.children) x.setAttribute('aria-pressed', x.getAttribute('data-level') === String(level) ? 'true' : 'false')
                loadBlockView(view, b, level, viewBox)
              },
            },
          }),
        )
      }
      const item = el(
        'article',
        { class: 'sgm-block' + (pending ? ' sgm-block-pending' : ''), testid: 'block-item', data: { 'block-id': b.id, level: b.level } },
        el(
          'div',
          { class: 'sgm-block-head' },
          code(b.id),
          pending ? el('span', { class: 'sgm-chip sgm-chip-pending', testid: 'status-chip' }, statusChip(lang, b.status || 'pending').label) : null,
          el('span', { class: 'sgm-muted sgm-small' }, b.first_turn === b.last_turn ? T('recent.turn', { n: b.first_turn }) : T('recent.turns', { first: b.first_turn, last: b.last_turn })),
          el('span', { class: 'sgm-badge' }, T('recent.level', { level: b.level })),
          b.tool_records ? el('span', { class: 'sgm-muted sgm-small' }, T('recent.tools', { n: b.tool_records })) : null,
          b.summary_source ? el('span', { class: 'sgm-muted sgm-small' }, Tn('recent.source', { source: label('source.', b.summary_source) })) : null,
        ),
        el('p', { class: 'sgm-block-title' + (b.title ? '' : ' sgm-muted') }, b.title ? data(b.title) : T('recent.untitled')),
        levels,
        viewBox,
      )
      if (openLevel !== undefined) loadBlockView(view, b, openLevel, viewBox)
      return item
    }
    function loadBlockView(view, b, level, target) {
      clear(target).appendChild(loading())
      fetchFor(view, target, () => get('/block', { namespace: state.namespace, id: b.id, level }), (d) => {
        const parts = [data(d.text === null || d.text === undefined ? '—' : String(d.text), 'div', { class: 'sgm-pre' })]
        if (Array.isArray(d.messages) && d.messages.length) parts.push(el('h4', { class: 'sgm-h4' }, T('recent.messages')), el('ol', { class: 'sgm-list sgm-messages' }, d.messages.map((m) => el('li', {}, messageCard(m, false)))))
        if (Array.isArray(d.tool_records) && d.tool_records.length) {
          parts.push(
            el('h4', { class: 'sgm-h4' }, T('recent.toolRecords')),
            table(
              [T('tool.name'), T('tool.call'), T('tool.args'), T('tool.result')],
              d.tool_records.map((r) => el('tr', { testid: 'tool-record' }, el('td', {}, code(r.name)), el('td', {}, code(r.call_id)), el('td', {}, el('div', { class: 'sgm-pre sgm-small' }, compactJson(r.arguments))), el('td', {}, el('div', { class: 'sgm-pre sgm-small' }, compactJson(r.result))))),
            ),
          )
        }
        target.appendChild(el('div', { class: 'sgm-block-view', testid: 'block-view', data: { 'block-id': b.id, level } }, parts))
      })
    }
    function messageCard(m, highlight) {
      return el(
        'div',
        { class: 'sgm-message sgm-role-' + String(m.role || '').replace(/[^a-z]/gi, '') + (highlight ? ' sgm-message-on' : ''), data: { 'message-id': m.id } },
        el(
          'div',
          { class: 'sgm-message-head' },
          code(m.id),
          el('span', { class: 'sgm-badge' }, label('role.', m.role || '')),
          m.tool_name ? el('span', { class: 'sgm-muted sgm-small' }, Tn('message.tool', { name: code(m.tool_name) })) : null,
          el('span', { class: 'sgm-muted sgm-small' }, [m.session ? [code(m.session, true), ' · '] : '', m.turn !== undefined ? T('evidence.turn', { turn: m.turn }) : '']),
          m.hidden ? el('span', { class: 'sgm-chip sgm-chip-forgotten' }, T('message.hidden')) : null,
          m.placeholders ? el('span', { class: 'sgm-muted sgm-small', testid: 'message-redacted' }, T('message.redacted', { n: m.placeholders })) : null,
          m.at ? el('span', { class: 'sgm-muted sgm-small' }, timeEl(m.at)) : null,
        ),
        data(m.content === null || m.content === undefined ? '' : String(m.content), 'div', { class: 'sgm-pre' }),
      )
    }

    // ---------------------------------------------------------------- Long-term memory
    const eventsState = { q: '', status: IN_MEMORY, type: '', scope: '', offset: 0, open: null, message: null }
    function openEvent(id) {
      eventsState.open = id
      eventsState.message = null
      eventsState.scroll = true
      if (state.tab !== 'longterm') showTab('longterm')
      else refreshTab()
    }
    VIEWS.longterm = (view, host) => {
      const search = el('input', { type: 'search', testid: 'event-search', id: nextId('q'), value: eventsState.q, placeholder: T('events.searchPlaceholder'), autocomplete: 'off' })
      const status = el(
        'select',
        { testid: 'event-status-filter', id: nextId('st') },
        el('option', { value: IN_MEMORY }, T('events.filter.inMemory')),
        EVENT_STATUSES.map((s) => el('option', { value: s }, statusChip(lang, s).label)),
        el('option', { value: ALL_STATUSES }, T('events.filter.all')),
      )
      status.value = eventsState.status
      const type = el('input', { type: 'text', id: nextId('ty'), value: eventsState.type, placeholder: T('events.anyType'), size: '12', autocomplete: 'off' })
      const scope = el('select', { id: nextId('sc') }, el('option', { value: '' }, T('events.anyScope')), el('option', { value: 'project' }, T('events.scope.project')), el('option', { value: 'user' }, T('events.scope.user')))
      scope.value = eventsState.scope
      let debounce = null
      const apply = () => {
        eventsState.q = search.value.trim()
        eventsState.status = status.value
        eventsState.type = type.value.trim()
        eventsState.scope = scope.value
        eventsState.offset = 0
        refreshTab()
      }
      const soon = () => {
        if (debounce) win.clearTimeout(debounce)
        debounce = later(apply, 250)
      }
      search.addEventListener('input', soon)
      type.addEventListener('input', soon)
      search.addEventListener('keydown', (e) => e.key === 'Enter' && apply())
      status.addEventListener('change', apply)
      scope.addEventListener('change', apply)
      const filters = el(
        'div',
        { class: 'sgm-filters', role: 'search' },
        el('label', { class: 'sgm-field sgm-grow' }, el('span', {}, T('events.search')), search),
        el('label', { class: 'sgm-field' }, el('span', {}, T('events.status')), status),
        el('label', { class: 'sgm-field' }, el('span', {}, T('events.type')), type),
        el('label', { class: 'sgm-field' }, el('span', {}, T('events.scope')), scope),
      )
      const list = el('div', { class: 'sgm-events' }, loading())
      const detail = el('div', { class: 'sgm-detail-host' })
      host.appendChild(filters)
      host.appendChild(el('div', { class: 'sgm-split sgm-split-wide' }, list, detail))
      view.refresh = async () => {
        await fetchFor(
          view,
          list,
          () => get('/events', { namespace: state.namespace, q: eventsState.q, status: eventsState.status, type: eventsState.type, scope: eventsState.scope, limit: PAGE, offset: eventsState.offset }),
          (d) => {
            const events = d.events || []
            list.appendChild(events.length ? el('ol', { class: 'sgm-list' }, events.map((ev) => el('li', {}, eventRow(ev)))) : el('p', { class: 'sgm-muted' }, T('events.none')))
            const p = pager(d.total, eventsState.offset, PAGE, (o) => ((eventsState.offset = o), refreshTab()))
            if (p) list.appendChild(p)
          },
        )
        if (!view.alive) return
        if (eventsState.open) await renderEventDetail(view, detail, eventsState.open)
        else clear(detail).appendChild(el('p', { class: 'sgm-muted sgm-hint' }, T('events.pick')))
      }
    }
    function eventTimes(ev) {
      return el(
        'dl',
        { class: 'sgm-times' },
        el('div', {}, el('dt', {}, T('events.mentioned')), el('dd', { testid: 'mentioned-at' }, timeEl(ev.mentioned_at))),
        el(
          'div',
          {},
          el('dt', {}, T('events.happened')),
          el(
            'dd',
            { testid: 'happened-at' },
            happenedText(lang, ev, locale),
            ev.time_original ? [' ', el('span', { class: 'sgm-muted' }, Tn('event.timeOriginal', { text: data(ev.time_original) }))] : null,
            ev.time_status && ev.time_status !== 'unknown' ? [' ', el('span', { class: 'sgm-muted', testid: 'time-status' }, Tn('event.timeStatus', { status: label('timeStatus.', ev.time_status) }))] : null,
          ),
        ),
      )
    }
    function eventLinks(label, items) {
      if (!Array.isArray(items) || !items.length) return null
      return el(
        'p',
        { class: 'sgm-small sgm-relations' },
        el('span', { class: 'sgm-muted' }, label + ' '),
        items.map((x) => button(x.id, { class: 'sgm-link', translate: 'no', title: x.title || undefined, data: { 'event-id': x.id }, on: { click: (e) => (e.stopPropagation(), openEvent(x.id)) } })),
      )
    }
    /** The id, type, scope, tier and pin of an event: the same line in its list row and in its open panel. */
    function eventBadges(ev) {
      return [
        code(ev.id),
        el('span', { class: 'sgm-badge' }, label('type.', ev.type || '')),
        el('span', { class: 'sgm-muted' }, label('events.scope.', ev.scope || '')),
        ev.tier === 'user' ? el('span', { class: 'sgm-badge sgm-badge-user' }, T('events.userTier')) : null,
        ev.pinned ? el('span', { class: 'sgm-badge sgm-badge-pin' }, T('events.pinned')) : null,
      ]
    }
    function eventRow(ev) {
      const row = el(
        'article',
        {
          class: 'sgm-event sgm-event-' + ev.status + (eventsState.open === ev.id ? ' sgm-event-on' : ''),
          testid: 'event-row',
          data: { 'event-id': ev.id, status: ev.status },
        },
        el(
          'div',
          { class: 'sgm-event-head' },
          chip(ev.status, ev.successor, openEvent),
          button(ev.title || ev.id, { class: 'sgm-link sgm-event-title', translate: 'no', testid: 'event-open', 'aria-label': T('events.open', { id: ev.id }) + ': ' + (ev.title || ''), on: { click: () => openEvent(ev.id) } }),
        ),
        el(
          'div',
          { class: 'sgm-event-meta sgm-small' },
          eventBadges(ev),
          ev.import ? el('span', { class: 'sgm-muted' }, T('events.fromImport', { id: ev.import })) : null,
        ),
        ev.summary ? data(ev.summary, 'p', { class: 'sgm-event-summary' }) : null,
        eventTimes(ev),
        eventLinks(T('events.replaces'), ev.replaces),
        eventLinks(T('events.disputes'), ev.disputed_with),
      )
      // A click anywhere on the row opens it (its own links and buttons do their own thing).
      row.addEventListener('click', (e) => {
        if (e.target.closest && e.target.closest('button, a, input, select')) return
        openEvent(ev.id)
      })
      return row
    }
    async function renderEventDetail(view, host, id) {
      let ev
      try {
        ev = await get('/event', { namespace: state.namespace, id })
      } catch (err) {
        if (!view.alive) return
        clear(host).appendChild(errorBox(err))
        return
      }
      if (!view.alive) return
      const messageHost = el('div', { class: 'sgm-message-host' })
      const actions = el(
        'div',
        { class: 'sgm-actions' },
        button(T('action.edit'), { testid: 'event-edit', on: { click: () => editDialog(ev) } }),
        ev.status === 'forgotten' || ev.status === 'archived'
          ? button(T('action.restore'), { testid: 'event-restore', on: { click: () => act('/events/restore', { namespace: state.namespace, id: ev.id }, T('done.restore', { id: ev.id })).catch(() => {}) } })
          : button(T('action.forget'), { class: 'sgm-btn sgm-btn-danger', testid: 'event-forget', on: { click: () => act('/events/forget', { namespace: state.namespace, id: ev.id }, T('done.forget', { id: ev.id })).catch(() => {}) } }),
        button(ev.pinned ? T('action.unpin') : T('action.pin'), {
          testid: 'event-pin',
          'aria-pressed': ev.pinned ? 'true' : 'false',
          on: { click: () => act('/events/pin', { namespace: state.namespace, id: ev.id, pinned: !ev.pinned }, T(ev.pinned ? 'done.unpin' : 'done.pin', { id: ev.id })).catch(() => {}) },
        }),
        button(T('action.merge'), { testid: 'event-merge', on: { click: () => mergeDialog(ev) } }),
        ev.status === 'disputed' || (ev.disputed_with && ev.disputed_with.length) ? button(T('action.resolve'), { testid: 'event-resolve', on: { click: () => resolveDialog(ev) } }) : null,
      )
      const sources = Array.isArray(ev.sources) ? ev.sources : []
      const list = (label, items) => (Array.isArray(items) && items.length ? [el('h4', { class: 'sgm-h4' }, label), el('ul', { class: 'sgm-list sgm-bullets' }, items.map((x) => el('li', {}, data(typeof x === 'string' ? x : compactJson(x)))))] : null)
      const history = Array.isArray(ev.history) ? ev.history : []
      const panelEl = el(
        'section',
        { class: 'sgm-card sgm-detail', testid: 'event-detail', data: { 'event-id': ev.id, status: ev.status }, 'aria-label': ev.title || ev.id },
        el('div', { class: 'sgm-detail-top' }, el('div', { class: 'sgm-event-head' }, chip(ev.status, ev.successor, openEvent)), button('×', { class: 'sgm-btn sgm-btn-small sgm-btn-ghost', 'aria-label': T('app.close'), on: { click: () => ((eventsState.open = null), clear(host).appendChild(el('p', { class: 'sgm-muted sgm-hint' }, T('events.pick')))) } })),
        el('h3', { class: 'sgm-h', translate: 'no' }, ev.title || ev.id),
        el(
          'div',
          { class: 'sgm-event-meta sgm-small' },
          eventBadges(ev),
          ev.origin ? el('span', { class: 'sgm-muted' }, Tn('event.origin', { origin: label('origin.', ev.origin) })) : null,
          ev.session ? el('span', { class: 'sgm-muted' }, Tn('event.session', { session: code(ev.session, true) })) : null,
          ev.block ? el('span', { class: 'sgm-muted' }, Tn('event.block', { block: code(ev.block) })) : null,
          typeof ev.confidence === 'number' ? el('span', { class: 'sgm-muted' }, T('events.confidence', { value: ev.confidence.toFixed(2) })) : null,
        ),
        ev.summary ? data(ev.summary, 'p') : null,
        eventTimes(ev),
        eventLinks(T('events.replaces'), ev.replaces),
        eventLinks(T('events.disputes'), ev.disputed_with),
        ev.merged_into ? eventLinks(T('event.mergedInto'), [typeof ev.merged_into === 'string' ? { id: ev.merged_into } : ev.merged_into]) : null,
        eventLinks(T('event.merged'), ev.merged),
        actions,
        ev.narrative ? [el('h4', { class: 'sgm-h4' }, T('event.narrative')), data(ev.narrative, 'div', { class: 'sgm-pre' })] : null,
        list(T('event.quotes'), ev.quotes),
        list(T('event.tags'), ev.tags),
        list(T('event.participants'), ev.participants),
        el('h4', { class: 'sgm-h4' }, T('event.sources')),
        sources.length
          ? el(
              'ul',
              { class: 'sgm-list sgm-sources' },
              sources.map((s) =>
                el(
                  'li',
                  {},
                  // A message source opens the message among its neighbours; an imported or tool source has no message.
                  s.message
                    ? button([el('span', { class: 'sgm-small' }, Tn('event.sourceLine', { message: code(s.message), session: code(s.session, true), turn: s.turn, role: label('role.', s.role) })), s.quote ? data(s.quote, 'q', { class: 'sgm-quote' }) : null], {
                        class: 'sgm-item',
                        testid: 'source-link',
                        data: { 'message-id': s.message },
                        on: { click: () => showMessage(view, messageHost, s.message) },
                      })
                    : el(
                        'div',
                        { class: 'sgm-item sgm-item-static', testid: 'source-item' },
                        el('span', { class: 'sgm-small' }, s.import ? Tn('event.sourceImport', { id: code(s.import), ref: data(s.source_ref || '') }) : Tn('event.sourceTool', { call: code(s.call_id || s.source_ref || '') })),
                        s.quote ? data(s.quote, 'q', { class: 'sgm-quote' }) : null,
                      ),
                ),
              ),
            )
          : el('p', { class: 'sgm-muted' }, T('event.noSources')),
        messageHost,
        history.length ? [el('h4', { class: 'sgm-h4' }, T('event.history')), el('ol', { class: 'sgm-list' }, history.map((a) => el('li', {}, auditRow(a))))] : null,
      )
      clear(host).appendChild(panelEl)
      if (eventsState.message) showMessage(view, messageHost, eventsState.message)
      // Opened by the user (not a live refresh): bring the panel into view, below the list on a narrow screen.
      if (eventsState.scroll && panelEl.scrollIntoView) panelEl.scrollIntoView({ block: 'nearest' })
      eventsState.scroll = false
    }
    function showMessage(view, host, id) {
      eventsState.message = id
      clear(host).appendChild(loading())
      fetchFor(view, host, () => get('/message', { namespace: state.namespace, id, around: 2 }), (d) => {
        const m = d.message || {}
        const around = Array.isArray(d.around) ? d.around : []
        // In the order they were said: message ids grow with capture order (a turn's user message before its reply).
        const all = (around.some((x) => x.id === m.id) ? around.slice() : around.concat([m])).sort(byMessageOrder)
        host.appendChild(
          el(
            'section',
            { class: 'sgm-card sgm-message-view', testid: 'message-view', data: { 'message-id': m.id }, 'aria-label': T('message.title', { id: m.id }) },
            el('div', { class: 'sgm-detail-top' }, el('h4', { class: 'sgm-h4' }, T('message.title', { id: m.id })), button('×', { class: 'sgm-btn sgm-btn-small sgm-btn-ghost', 'aria-label': T('app.close'), on: { click: () => ((eventsState.message = null), clear(host)) } })),
            // The message among its neighbours, itself highlighted (only the message when it has none).
            all.length > 1 ? [el('p', { class: 'sgm-muted sgm-small' }, T('message.around')), el('ol', { class: 'sgm-list sgm-messages' }, all.map((x) => el('li', {}, messageCard(x, x.id === m.id))))] : messageCard(m, true),
          ),
        )
      })
    }
    function editDialog(ev) {
      dialog(T('edit.title', { id: ev.id }), (box, close) => {
        const title = el('input', { type: 'text', testid: 'edit-title', value: ev.title || '', maxlength: '300' })
        const summary = el('textarea', { testid: 'edit-summary', rows: '5' })
        summary.value = ev.summary || ''
        // The time: its wording (read from when it was said) and its status, so a corrected plan can lose "next week".
        const whenInput = el('input', { type: 'text', testid: 'edit-when', value: ev.time_original || '', maxlength: '200', autocomplete: 'off' })
        const TIME_STATUSES = ['planned', 'occurred', 'ongoing', 'cancelled', 'unknown']
        const timeStatus = el('select', { testid: 'edit-time-status' }, TIME_STATUSES.map((x) => el('option', { value: x }, T('timeStatus.' + x))))
        timeStatus.value = TIME_STATUSES.includes(ev.time_status) ? ev.time_status : 'unknown'
        const err = el('p', { class: 'sgm-error-text', role: 'alert' })
        const save = button(T('app.save'), {
          class: 'sgm-btn sgm-btn-primary',
          testid: 'edit-save',
          on: {
            click: async () => {
              const body = { namespace: state.namespace, id: ev.id }
              if (title.value.trim() !== (ev.title || '')) body.title = title.value.trim()
              if (summary.value.trim() !== (ev.summary || '')) body.summary = summary.value.trim()
              if (whenInput.value.trim() !== (ev.time_original || '')) body.when = whenInput.value.trim()
              if (timeStatus.value !== (ev.time_status || 'unknown')) body.time_status = timeStatus.value
              if (!('title' in body) && !('summary' in body) && !('when' in body) && !('time_status' in body)) {
                err.textContent = T('edit.unchanged')
                return
              }
              save.disabled = true
              try {
                const r = await act('/events/edit', body, (res) => T('done.edit', { id: res.id, old: ev.id }))
                close()
                if (r && r.id) openEvent(r.id)
              } catch (e) {
                err.textContent = e.message
                save.disabled = false
              }
            },
          },
        })
        append(box, [
          el('p', { class: 'sgm-muted sgm-small' }, T('edit.note')),
          el('label', { class: 'sgm-field' }, el('span', {}, T('edit.fieldTitle')), title),
          el('label', { class: 'sgm-field' }, el('span', {}, T('edit.fieldSummary')), summary),
          el('label', { class: 'sgm-field' }, el('span', {}, T('edit.fieldWhen')), whenInput, el('span', { class: 'sgm-muted sgm-small' }, T('edit.whenHelp', { at: when(ev.mentioned_at) }))),
          el('label', { class: 'sgm-field' }, el('span', {}, T('edit.fieldTimeStatus')), timeStatus),
          err,
          el('div', { class: 'sgm-actions' }, save, button(T('app.cancel'), { testid: 'dialog-cancel', on: { click: close } })),
        ])
      })
    }
    function mergeDialog(ev) {
      dialog(T('merge.title', { id: ev.id }), (box, close) => {
        const q = el('input', { type: 'search', testid: 'merge-search', placeholder: T('events.searchPlaceholder'), autocomplete: 'off' })
        const results = el('ul', { class: 'sgm-list sgm-merge-list' })
        const err = el('p', { class: 'sgm-error-text', role: 'alert' })
        const picker = el('div', {}, el('p', { class: 'sgm-muted sgm-small' }, T('merge.note', { id: ev.id })), el('p', { class: 'sgm-muted sgm-small' }, T('merge.eligible')), el('label', { class: 'sgm-field' }, el('span', {}, T('merge.search')), q), results)
        const preview = el('div', { class: 'sgm-merge-preview' })
        const side = (heading, x) =>
          el('div', { class: 'sgm-card sgm-merge-side', testid: 'merge-side', data: { 'event-id': x.id } }, el('h4', { class: 'sgm-h4' }, heading), el('div', { class: 'sgm-event-meta sgm-small' }, eventBadges(x)), data(x.title || '', 'p', { class: 'sgm-strong' }), x.summary ? data(x.summary, 'p', { class: 'sgm-small' }) : null)
        // Step two: both events side by side and what the merge does; nothing is written before "Merge".
        const showPreview = (o) => {
          clear(preview)
          picker.hidden = true
          const go = button(T('merge.confirm'), {
            class: 'sgm-btn sgm-btn-primary',
            testid: 'merge-confirm',
            on: {
              click: async () => {
                go.disabled = true
                try {
                  await act('/events/merge', { namespace: state.namespace, keep: ev.id, merge: o.id }, (r) => T('done.merge', { merged: r.merged || o.id, survivor: r.survivor || ev.id }))
                  close()
                } catch (e) {
                  err.textContent = e.message
                  go.disabled = false
                }
              },
            },
          })
          append(preview, [
            el('h4', { class: 'sgm-h4', testid: 'merge-preview' }, Tn('merge.preview', { merged: code(o.id), survivor: code(ev.id) })),
            el('div', { class: 'sgm-grid2' }, side(T('merge.stays'), ev), side(T('merge.goes'), o)),
            el('p', { class: 'sgm-small' }, Tn('merge.previewNote', { merged: code(o.id), survivor: code(ev.id) })),
            el('div', { class: 'sgm-actions' }, go, button(T('merge.back'), { testid: 'merge-back', on: { click: () => ((picker.hidden = false), clear(preview), q.focus()) } })),
          ])
          go.focus()
        }
        let seq = 0
        const find = async () => {
          const mine = ++seq
          try {
            // Only what the merge accepts (the server applies the merge's own rule): no option it would refuse.
            const d = await get('/events/merge-options', { namespace: state.namespace, id: ev.id, q: q.value.trim(), limit: 20 })
            if (mine !== seq) return
            const options = d.events || []
            clear(results)
            if (!options.length) results.appendChild(el('li', { class: 'sgm-muted' }, T('merge.none')))
            for (const o of options) {
              results.appendChild(
                el(
                  'li',
                  {},
                  button([code(o.id), ' ', data(o.title || ''), ' ', el('span', { class: statusChip(lang, o.status).className }, statusChip(lang, o.status).label)], {
                    class: 'sgm-item sgm-item-row',
                    testid: 'merge-option',
                    data: { 'event-id': o.id },
                    'aria-label': T('merge.choose', { id: o.id }) + ': ' + (o.title || ''),
                    on: { click: () => showPreview(o) },
                  }),
                ),
              )
            }
          } catch (e) {
            err.textContent = e.message
          }
        }
        let t = null
        q.addEventListener('input', () => {
          if (t) win.clearTimeout(t)
          t = later(find, 250)
        })
        append(box, [picker, preview, err, el('div', { class: 'sgm-actions' }, button(T('app.cancel'), { testid: 'dialog-cancel', on: { click: close } }))])
        find()
      })
    }
    function resolveDialog(ev) {
      dialog(T('resolve.title', { id: ev.id }), (box, close) => {
        const others = Array.isArray(ev.disputed_with) ? ev.disputed_with : []
        const err = el('p', { class: 'sgm-error-text', role: 'alert' })
        const run = async (body) => {
          try {
            await act('/events/resolve', Object.assign({ namespace: state.namespace }, body), T('done.resolve'))
            close()
          } catch (e) {
            err.textContent = e.message
          }
        }
        const options = []
        for (const o of others) {
          options.push(
            button(T('resolve.keepThis', { keep: ev.id, other: o.id }), { class: 'sgm-btn sgm-item', testid: 'resolve-keep', data: { keep: ev.id, other: o.id }, on: { click: () => run({ keep: ev.id, other: o.id }) } }),
            button([T('resolve.keepThis', { keep: o.id, other: ev.id }), o.title ? [' (', data(o.title), ')'] : null], { class: 'sgm-btn sgm-item', testid: 'resolve-keep', data: { keep: o.id, other: ev.id }, on: { click: () => run({ keep: o.id, other: ev.id }) } }),
            button(T('resolve.keepBoth', { a: ev.id, b: o.id }), { class: 'sgm-btn sgm-item', testid: 'resolve-both', data: { ids: ev.id + ',' + o.id }, on: { click: () => run({ keep: 'both', ids: [ev.id, o.id] }) } }),
          )
        }
        append(box, [others.length ? el('div', { class: 'sgm-choices' }, options) : el('p', { class: 'sgm-muted' }, T('resolve.noPair')), err, el('div', { class: 'sgm-actions' }, button(T('app.cancel'), { testid: 'dialog-cancel', on: { click: close } }))])
      })
    }

    // ---------------------------------------------------------------- Graph
    const graphState = { asOf: '', q: '', history: true, selected: null, noHistoryParam: false }
    VIEWS.graph = (view, host) => {
      // A text field in the reader's date order (the native picker follows the browser's UI language instead).
      const asOf = el('input', { type: 'text', inputmode: 'numeric', testid: 'as-of-input', id: nextId('asof'), value: dateInputText(graphState.asOf || todayUtc(), locale), placeholder: dateInputText(todayUtc(), locale), autocomplete: 'off', size: '12' })
      const asOfError = el('span', { class: 'sgm-error-text sgm-small', role: 'alert', testid: 'as-of-error' })
      const applyBtn = button(T('graph.apply'), { class: 'sgm-btn sgm-btn-primary', testid: 'as-of-apply' })
      const nowBtn = button(T('graph.now'), { testid: 'as-of-now' })
      const q = el('input', { type: 'search', id: nextId('gq'), value: graphState.q, placeholder: T('graph.search'), autocomplete: 'off' })
      const hist = el('input', { type: 'checkbox', id: nextId('gh'), checked: graphState.history })
      const apply = () => {
        const typed = asOf.value.trim()
        const parsed = typed ? parseDateInput(typed, locale) : ''
        asOfError.textContent = parsed === null ? T('graph.badDate', { example: dateInputText(todayUtc(), locale) }) : ''
        if (parsed === null) return
        graphState.asOf = parsed
        graphState.q = q.value.trim()
        graphState.history = hist.checked
        refreshTab()
      }
      applyBtn.addEventListener('click', apply)
      asOf.addEventListener('keydown', (e) => e.key === 'Enter' && apply())
      q.addEventListener('keydown', (e) => e.key === 'Enter' && apply())
      hist.addEventListener('change', apply)
      nowBtn.addEventListener('click', () => {
        asOf.value = dateInputText(todayUtc(), locale)
        asOfError.textContent = ''
        graphState.asOf = ''
        refreshTab()
      })
      host.appendChild(
        el(
          'div',
          { class: 'sgm-filters' },
          el('label', { class: 'sgm-field' }, el('span', {}, T('graph.asOf')), asOf, asOfError),
          el('div', { class: 'sgm-field sgm-field-buttons' }, applyBtn, nowBtn),
          el('label', { class: 'sgm-field sgm-grow' }, el('span', {}, T('graph.search')), q),
          el('label', { class: 'sgm-check' }, hist, el('span', {}, T('graph.history'))),
        ),
      )
      const body = el('div', { class: 'sgm-graph' }, loading())
      host.appendChild(body)
      view.refresh = () =>
        fetchFor(
          view,
          body,
          async () => {
            const params = { namespace: state.namespace, as_of: graphState.asOf, q: graphState.q, limit: 100 }
            if (graphState.history && !graphState.noHistoryParam) params.history = true
            try {
              return await get('/graph', params)
            } catch (err) {
              // A server without the `history` switch refuses the unknown field: ask again without it.
              if (err.status === 400 && params.history && /history/.test(JSON.stringify(err.body || {}))) {
                graphState.noHistoryParam = true
                delete params.history
                return get('/graph', params)
              }
              throw err
            }
          },
          (d) => renderGraph(body, d, host),
        )
    }
    function renderGraph(body, d, host) {
      const nodes = Array.isArray(d.nodes) ? d.nodes : []
      const edges = Array.isArray(d.edges) ? d.edges : []
      const facts = Array.isArray(d.facts) ? d.facts : []
      const width = Math.max(320, Math.min(1200, Math.floor((host.clientWidth || 800) - 8)))
      const height = width < 560 ? 380 : 480
      const pos = layoutGraph(nodes, edges, { width, height, margin: width < 560 ? 40 : 60 })
      const canvas = svg('svg', { class: 'sgm-graph-canvas', testid: 'graph-canvas', viewBox: '0 0 ' + width + ' ' + height, width: String(width), height: String(height), role: 'img', 'aria-label': T('graph.label', { nodes: nodes.length, edges: edges.length }) })
      canvas.appendChild(svg('title', {}, T('graph.label', { nodes: nodes.length, edges: edges.length })))
      // Edges between the same two nodes bend apart so their predicate labels do not sit on each other.
      const groups = {}
      for (const e of edges) {
        const a = String(e.source)
        const b = String(e.target)
        const key = a < b ? a + '\u0000' + b : b + '\u0000' + a
        ;(groups[key] = groups[key] || []).push(e)
      }
      const edgeLayer = svg('g', { class: 'sgm-edges' })
      const labelLayer = svg('g', { class: 'sgm-edge-labels' })
      for (const key of Object.keys(groups).sort()) {
        const group = groups[key]
        group.forEach((e, i) => {
          const s = pos[String(e.source)]
          const t = pos[String(e.target)]
          if (!s || !t) return
          const bend = (i - (group.length - 1) / 2) * 28
          const mx = (s.x + t.x) / 2
          const my = (s.y + t.y) / 2
          const len = Math.max(1, Math.hypot(t.x - s.x, t.y - s.y))
          const nx = -(t.y - s.y) / len
          const ny = (t.x - s.x) / len
          const cx = mx + nx * bend * 2
          const cy = my + ny * bend * 2
          const lx = mx + nx * bend
          const ly = my + ny * bend
          const selected = graphState.selected && (String(e.source) === graphState.selected || String(e.target) === graphState.selected)
          edgeLayer.appendChild(svg('path', { class: 'sgm-edge sgm-edge-' + String(e.status || 'active') + (selected ? ' sgm-edge-on' : ''), d: 'M' + s.x + ' ' + s.y + ' Q' + cx + ' ' + cy + ' ' + t.x + ' ' + t.y, 'marker-end': 'url(#sgm-arrow)', data: { edge: e.id } }))
          labelLayer.appendChild(svg('text', { class: 'sgm-edge-label', x: String(lx), y: String(ly - 4), 'text-anchor': 'middle' }, String(e.predicate || '')))
        })
      }
      const defs = svg('defs', {}, svg('marker', { id: 'sgm-arrow', viewBox: '0 0 10 10', refX: '22', refY: '5', markerWidth: '7', markerHeight: '7', orient: 'auto-start-reverse' }, svg('path', { d: 'M0 0 L10 5 L0 10 z', class: 'sgm-arrow' })))
      const nodeLayer = svg('g', { class: 'sgm-nodes' })
      for (const n of nodes) {
        const key = nodeKey(n)
        const p = pos[key]
        if (!p) continue
        const r = 9 + Math.min(9, Math.sqrt(n.degree || 0) * 3)
        const label = T('graph.node', { name: n.name || key, kind: n.kind || '', degree: n.degree || 0 })
        const g = svg(
          'g',
          {
            class: 'sgm-node' + (graphState.selected === key ? ' sgm-node-on' : ''),
            testid: 'graph-node',
            data: { node: key },
            transform: 'translate(' + p.x + ' ' + p.y + ')',
            tabindex: '0',
            role: 'button',
            'aria-label': label,
            'aria-pressed': graphState.selected === key ? 'true' : 'false',
          },
          svg('title', {}, label),
          svg('circle', { r: String(r), class: 'sgm-node-dot sgm-kind-' + String(n.kind || 'x').replace(/[^a-z]/gi, '') }),
          svg('text', { class: 'sgm-node-label', translate: 'no', x: String(labelShift(String(n.name || key), p.x, width)), y: String(r + 14), 'text-anchor': 'middle' }, String(n.name || key)),
        )
        const pick = () => {
          graphState.selected = graphState.selected === key ? null : key
          renderGraph(clear(body), d, host)
          const again = body.querySelector('[data-testid="graph-node"][data-node="' + (root.CSS && root.CSS.escape ? root.CSS.escape(key) : key.replace(/"/g, '\\"')) + '"]')
          if (again) again.focus()
        }
        g.addEventListener('click', pick)
        g.addEventListener('keydown', (e) => {
          if (e.key === 'Enter' || e.key === ' ') {
            e.preventDefault()
            pick()
          }
        })
        nodeLayer.appendChild(g)
      }
      append(canvas, [defs, edgeLayer, labelLayer, nodeLayer])
      const selectedNode = nodes.find((n) => nodeKey(n) === graphState.selected)
      const matches = (f) => !selectedNode || [selectedNode.name, nodeKey(selectedNode)].some((x) => x !== undefined && (String(f.subject) === String(x) || String(f.object) === String(x)))
      const shown = facts.filter(matches)
      const rows = shown.map((f) =>
        el(
          'tr',
          { testid: 'graph-fact', data: { 'fact-id': f.id, current: f.current ? 'true' : 'false' }, class: f.current ? '' : 'sgm-fact-past' },
          el('td', {}, code(f.id)),
          el('td', {}, data(f.subject)),
          el('td', {}, data(f.predicate, 'span', { class: 'sgm-predicate' })),
          el('td', {}, data(f.object)),
          el('td', {}, timeEl(f.valid_from)),
          el('td', {}, f.valid_to ? timeEl(f.valid_to) : T('fact.openEnded')),
          el('td', {}, chip(f.status || 'active')),
          el('td', {}, el('span', { class: 'sgm-chip ' + (f.current ? 'sgm-chip-active' : 'sgm-chip-archived') }, f.current ? T('status.current') : T('status.past'))),
          el('td', {}, (f.events || []).map((id) => button(id, { class: 'sgm-link', data: { 'event-id': id }, on: { click: () => openEvent(id) } }))),
        ),
      )
      append(body, [
        el('p', { class: 'sgm-muted sgm-small', testid: 'graph-as-of' }, T('graph.showing', { date: when(d.as_of) })),
        nodes.length ? el('div', { class: 'sgm-canvas-wrap' }, canvas) : el('p', { class: 'sgm-muted' }, T('graph.empty')),
        el(
          'div',
          { class: 'sgm-detail-top' },
          el('h3', { class: 'sgm-h' }, selectedNode ? Tn('graph.selected', { name: data(selectedNode.name || nodeKey(selectedNode)) }) : T('graph.facts')),
          selectedNode ? button(T('graph.clear'), { class: 'sgm-btn sgm-btn-small', on: { click: () => ((graphState.selected = null), renderGraph(clear(body), d, host)) } }) : null,
        ),
        rows.length ? table([T('fact.id'), T('fact.subject'), T('fact.predicate'), T('fact.object'), T('fact.validFrom'), T('fact.validTo'), T('fact.status'), T('fact.current'), T('fact.events')], rows) : el('p', { class: 'sgm-muted' }, T('app.empty')),
      ])
    }

    // ---------------------------------------------------------------- Evidence
    const evidenceState = { session: '', offset: 0 }
    VIEWS.evidence = (view, host) => {
      const session = el('input', { type: 'text', id: nextId('es'), value: evidenceState.session, placeholder: T('evidence.anySession'), autocomplete: 'off' })
      session.addEventListener('change', () => ((evidenceState.session = session.value.trim()), (evidenceState.offset = 0), refreshTab()))
      host.appendChild(el('div', { class: 'sgm-filters' }, el('label', { class: 'sgm-field' }, el('span', {}, T('evidence.session')), session)))
      const body = el('div', {}, loading())
      host.appendChild(body)
      view.refresh = () =>
        fetchFor(view, body, () => get('/evidence', { namespace: state.namespace, session: evidenceState.session, limit: PAGE, offset: evidenceState.offset }), (d) => {
          const receipts = d.receipts || []
          const assessments = d.assessments || []
          const receiptRows = receipts.map((r) =>
            el(
              'article',
              { class: 'sgm-card sgm-receipt', testid: 'receipt-row', data: { 'receipt-id': r.id } },
              el('div', { class: 'sgm-event-meta sgm-small' }, code(r.id), code(r.session || '', true), el('span', { class: 'sgm-muted' }, T('evidence.turn', { turn: r.turn })), timeEl(r.at)),
              r.answer ? el('p', {}, el('span', { class: 'sgm-muted' }, T('evidence.answer') + ': '), data(r.answer)) : null,
              el('p', { class: 'sgm-small sgm-muted' }, T('evidence.uses')),
              (r.uses || []).length
                ? el(
                    'ul',
                    { class: 'sgm-list sgm-uses' },
                    r.uses.map((u) =>
                      el(
                        'li',
                        {},
                        /^evt_/.test(String(u.ref)) ? button(u.ref, { class: 'sgm-link', data: { 'event-id': u.ref }, on: { click: () => openEvent(u.ref) } }) : code(u.ref),
                        ' ',
                        el('span', { class: 'sgm-badge' }, label('type.', u.kind || '')),
                        ' ',
                        u.title ? data(u.title) : null,
                        u.verdict ? [' ', el('span', { class: 'sgm-chip sgm-chip-verdict' }, label('verdict.', u.verdict))] : null,
                      ),
                    ),
                  )
                : el('p', { class: 'sgm-muted sgm-small' }, T('evidence.noUses')),
            ),
          )
          const assessmentRows = assessments.map((a) =>
            el(
              'tr',
              { testid: 'assessment-row', data: { batch: a.batch } },
              el('td', {}, code(a.batch)),
              el('td', {}, code(a.session || '', true)),
              el('td', {}, timeEl(a.at)),
              el('td', {}, el('span', { class: 'sgm-chip sgm-chip-verdict sgm-verdict-' + String(a.verdict || '').replace(/[^a-z]/gi, '') }, label('verdict.', a.verdict || ''))),
              el('td', {}, code(Array.isArray(a.refs) ? a.refs.join(', ') : String(a.refs === undefined ? '' : a.refs), true)),
              el('td', {}, data(a.note || '')),
            ),
          )
          append(body, [
            section(T('evidence.receipts'), receiptRows.length ? el('div', { class: 'sgm-stack' }, receiptRows) : el('p', { class: 'sgm-muted' }, T('evidence.noReceipts'))),
            section(T('evidence.assessments'), assessmentRows.length ? table([T('evidence.batch'), T('evidence.session'), T('evidence.at'), T('evidence.verdict'), T('evidence.refs'), T('evidence.note')], assessmentRows) : el('p', { class: 'sgm-muted' }, T('evidence.noAssessments'))),
            pager(d.total, evidenceState.offset, PAGE, (o) => ((evidenceState.offset = o), refreshTab())),
          ])
        })
    }

    // ---------------------------------------------------------------- Imports
    VIEWS.imports = (view, host) => {
      const file = el('input', { type: 'file', testid: 'import-file', id: nextId('file'), accept: '.md,.markdown,.txt,.json,.jsonl,text/plain,text/markdown,application/json' })
      const scope = el('select', { id: nextId('isc'), testid: 'import-scope' }, el('option', { value: 'project' }, T('events.scope.project')), el('option', { value: 'user' }, T('events.scope.user')))
      const status = el('p', { class: 'sgm-muted sgm-small', role: 'status' })
      file.addEventListener('change', () => {
        const f = file.files && file.files[0]
        if (!f) return
        status.textContent = T('imports.reading', { file: f.name })
        const reader = new win.FileReader()
        reader.onerror = () => {
          status.textContent = ''
          toast(T('action.failed', { error: String(reader.error || 'read error') }), { error: true })
        }
        reader.onload = async () => {
          const text = String(reader.result || '')
          try {
            // What the file holds first; nothing is added until the user says so.
            const pre = await post('/imports/preview', { namespace: state.namespace, text, filename: f.name })
            status.textContent = ''
            importPreview(f.name, pre, () => act('/imports/add', { namespace: state.namespace, text, filename: f.name, scope: scope.value }, (r) => T('done.importAdd', { file: f.name, n: Array.isArray(r.inserted) ? r.inserted.length : 0 })))
          } catch (e) {
            toast(T('action.failed', { error: e.message }), { error: true })
          }
          status.textContent = ''
          file.value = ''
        }
        reader.readAsText(f)
      })
      host.appendChild(section(T('imports.add'), el('div', { class: 'sgm-filters' }, el('label', { class: 'sgm-field sgm-grow' }, el('span', {}, T('imports.file')), file), el('label', { class: 'sgm-field' }, el('span', {}, T('imports.scope')), scope)), status))
      const body = el('div', {}, loading())
      host.appendChild(body)
      view.refresh = () =>
        fetchFor(view, body, () => get('/imports', { namespace: state.namespace }), (d) => {
          const imports = d.imports || []
          if (!imports.length) {
            body.appendChild(el('p', { class: 'sgm-muted' }, T('imports.none')))
            return
          }
          body.appendChild(
            el(
              'ul',
              { class: 'sgm-list sgm-stack' },
              imports.map((imp) => {
                const counts = imp.counts && imp.counts.events ? Object.entries(imp.counts.events).map(([k, v]) => statusChip(lang, k).label + ' ' + v).join(', ') : ''
                return el(
                  'li',
                  {},
                  el(
                    'article',
                    { class: 'sgm-card sgm-import' + (imp.status === 'removed' ? ' sgm-import-removed' : ''), testid: 'import-row', data: { 'import-id': imp.id, status: imp.status } },
                    el('div', { class: 'sgm-event-head' }, el('span', { class: 'sgm-chip sgm-chip-' + (imp.status === 'removed' ? 'archived' : 'active') }, statusChip(lang, imp.status || 'active').label), data(imp.source_name || imp.id, 'span', { class: 'sgm-strong' })),
                    el(
                      'div',
                      { class: 'sgm-event-meta sgm-small' },
                      code(imp.id),
                      el('span', { class: 'sgm-badge', translate: 'no' }, String(imp.format || '')),
                      el('span', { class: 'sgm-muted' }, T('imports.items', { n: imp.item_count || 0 })),
                      counts ? el('span', { class: 'sgm-muted' }, T('imports.eventCounts', { counts })) : null,
                      el('span', { class: 'sgm-muted' }, T('imports.created', { at: when(imp.created_at) })),
                      imp.removed_at ? el('span', { class: 'sgm-muted' }, T('imports.removedAt', { at: when(imp.removed_at) })) : null,
                    ),
                    imp.status !== 'removed'
                      ? el(
                          'div',
                          { class: 'sgm-actions' },
                          button(T('imports.remove'), {
                            class: 'sgm-btn sgm-btn-danger',
                            testid: 'import-remove',
                            data: { 'import-id': imp.id },
                            on: {
                              click: async (e) => {
                                const b = e.currentTarget
                                if (!(await confirmFirst(T('confirm.removeImport.title', { id: imp.id }), T('confirm.removeImport.body'), T('confirm.removeGo')))) return
                                b.disabled = true
                                act('/imports/remove', { namespace: state.namespace, import_id: imp.id }, T('done.importRemove', { id: imp.id })).catch(() => {})
                              },
                            },
                          }),
                        )
                      : null,
                  ),
                )
              }),
            ),
          )
        })
    }

    function importPreview(name, pre, add) {
      dialog(T('imports.preview', { file: name }), (box, close) => {
        const items = Array.isArray(pre.items) ? pre.items : []
        const err = el('p', { class: 'sgm-error-text', role: 'alert' })
        const go = button(T('imports.confirm', { count: pre.count }), {
          class: 'sgm-btn sgm-btn-primary',
          testid: 'import-confirm',
          on: {
            click: async () => {
              go.disabled = true
              try {
                await add()
                close()
              } catch (e) {
                err.textContent = e.message
                go.disabled = false
              }
            },
          },
        })
        append(box, [
          el('p', { testid: 'import-preview-count' }, Tn('imports.previewCount', { count: String(pre.count), format: code(pre.format) })),
          items.length < pre.count ? el('p', { class: 'sgm-muted sgm-small' }, T('imports.previewShown', { n: items.length })) : null,
          el('ol', { class: 'sgm-list sgm-bullets sgm-import-items', testid: 'import-preview' }, items.map((i) => el('li', { testid: 'import-preview-item' }, data(i.text), i.created_at ? [' ', el('span', { class: 'sgm-muted sgm-small' }, when(i.created_at))] : null))),
          Array.isArray(pre.warnings) && pre.warnings.length ? [el('h4', { class: 'sgm-h4' }, T('imports.warnings')), el('ul', { class: 'sgm-list sgm-bullets' }, pre.warnings.map((w) => el('li', { class: 'sgm-small' }, data(w))))] : null,
          err,
          el('div', { class: 'sgm-actions' }, go, button(T('app.cancel'), { testid: 'dialog-cancel', on: { click: close } })),
        ])
      })
    }

    // ---------------------------------------------------------------- Audit
    const auditState = { subject: '', actor: '', before: null, stack: [], bookkeeping: false }
    /** An audit entry as a sentence: "You forgot evt_3 “We use npm”", with its time, its undo and its change. */
    function auditSentence(a) {
      const subject = a.subject_id ? String(a.subject_id) : ''
      const id = !subject ? '' : /^evt_/.test(subject) ? button(subject, { class: 'sgm-link', data: { 'event-id': subject }, on: { click: () => openEvent(subject) } }) : code(subject)
      const title = a.subject_title ? data('“' + a.subject_title + '”', 'span', { class: 'sgm-audit-title' }) : ''
      const who = knownLabel(lang, 'who.', a.actor) || data(String(a.actor || ''))
      const key = knownLabel(lang, 'audit.s.', a.action) === null ? 'audit.s.other' : 'audit.s.' + a.action
      return Tn(key, { who, id, title, action: code(a.action) })
    }
    function changeTable(a) {
      const rows = changeRows(a.before, a.after)
      if (!rows.length) return null
      const cell = (v) => el('td', {}, v === null || v === undefined ? el('span', { class: 'sgm-muted' }, '—') : data(typeof v === 'string' ? v : compactJson(v), 'div', { class: 'sgm-pre sgm-small' }))
      return table([T('audit.field'), T('audit.before'), T('audit.after')], rows.map((r) => el('tr', { testid: 'audit-change-row' }, el('td', {}, r.field ? code(r.field) : ''), cell(r.before), cell(r.after))))
    }
    function auditRow(a) {
      const change = changeTable(a)
      return el(
        'article',
        { class: 'sgm-audit', testid: 'audit-row', data: { 'audit-id': a.id, action: a.action } },
        el(
          'div',
          { class: 'sgm-audit-line' },
          el('p', { class: 'sgm-audit-sentence', testid: 'audit-sentence' }, auditSentence(a)),
          a.undo ? button(T('action.undo'), { class: 'sgm-btn sgm-btn-small', testid: 'undo-button', title: lang === 'en' ? a.undo.label : undefined, data: { 'audit-id': a.id }, on: { click: (e) => ((e.currentTarget.disabled = true), undo(a.id)) } }) : null,
        ),
        el(
          'div',
          { class: 'sgm-event-meta sgm-small sgm-muted' },
          timeEl(a.at),
          el('span', {}, T('audit.entry', { id: a.id })),
          code(a.action),
          a.undone_by ? el('span', { class: 'sgm-chip sgm-chip-archived' }, T('audit.undoneBy', { id: a.undone_by })) : null,
        ),
        change ? el('details', { class: 'sgm-change' }, el('summary', {}, T('audit.change')), change) : null,
      )
    }
    VIEWS.audit = (view, host) => {
      const subject = el('input', { type: 'search', id: nextId('as'), value: auditState.subject, placeholder: 'evt_3', autocomplete: 'off' })
      const actor = el('select', { id: nextId('aa') }, el('option', { value: '' }, T('audit.anyActor')), ['user', 'agent', 'capture', 'model', 'system'].map((x) => el('option', { value: x }, T('actor.' + x))))
      actor.value = auditState.actor
      const bookkeeping = el('input', { type: 'checkbox', testid: 'audit-bookkeeping', checked: auditState.bookkeeping })
      bookkeeping.addEventListener('change', () => ((auditState.bookkeeping = bookkeeping.checked), refreshTab()))
      const apply = () => {
        auditState.subject = subject.value.trim()
        auditState.actor = actor.value
        auditState.before = null
        auditState.stack = []
        refreshTab()
      }
      subject.addEventListener('change', apply)
      actor.addEventListener('change', apply)
      host.appendChild(el('div', { class: 'sgm-filters' }, el('label', { class: 'sgm-field' }, el('span', {}, T('audit.subject')), subject), el('label', { class: 'sgm-field' }, el('span', {}, T('audit.actor')), actor), el('label', { class: 'sgm-check' }, bookkeeping, el('span', {}, T('audit.bookkeeping')))))
      const body = el('div', {}, loading())
      host.appendChild(body)
      view.refresh = () =>
        fetchFor(view, body, () => get('/audit', { namespace: state.namespace, subject: auditState.subject, actor: auditState.actor, before_id: auditState.before, limit: PAGE }), (d) => {
          const all = d.entries || []
          const entries = auditState.bookkeeping ? all : all.filter((a) => !isBookkeeping(a))
          if (all.length > entries.length) body.appendChild(el('p', { class: 'sgm-muted sgm-small' }, T('audit.hidden', { n: all.length - entries.length })))
          body.appendChild(entries.length ? el('ol', { class: 'sgm-list sgm-stack' }, entries.map((a) => el('li', {}, auditRow(a)))) : el('p', { class: 'sgm-muted' }, T('audit.none')))
          const nav = el('div', { class: 'sgm-pager' })
          if (auditState.before !== null) nav.appendChild(button(T('audit.newest'), { on: { click: () => ((auditState.before = null), (auditState.stack = []), refreshTab()) } }))
          if (d.next_before_id !== null && d.next_before_id !== undefined) nav.appendChild(button(T('audit.older'), { testid: 'audit-older', on: { click: () => (auditState.stack.push(auditState.before), (auditState.before = d.next_before_id), refreshTab()) } }))
          if (nav.children.length) body.appendChild(nav)
        })
    }

    // ---------------------------------------------------------------- Settings
    VIEWS.settings = (view, host) => {
      const body = el('div', {}, loading())
      host.appendChild(body)
      let dirty = false
      view.refresh = () => {
        // A live change must not wipe what the user is typing, nor fold what they opened.
        if (dirty) return Promise.resolve()
        const both = async () => {
          const [d, ctx] = await Promise.all([get('/settings'), get('/context-settings').catch((err) => ({ error: err.message }))])
          // Whether Advanced is open now, just before the form is drawn again (it was perhaps opened meanwhile).
          const shown = body.querySelector('.sgm-settings-advanced')
          if (shown) advancedOpen = shown.open
          return { d, ctx }
        }
        return fetchFor(view, body, both, ({ d, ctx }) => renderSettings(body, d, ctx, () => (dirty = true), () => (dirty = false)))
      }
    }
    /** A help text from the settings table: its `literal values` as code (names a user types, not UI words). */
    function withCode(text) {
      return String(text).split('`').map((part, i) => (i % 2 ? code(part) : part)).filter((x) => x !== '')
    }
    // The Settings tab in groups, each setting once: Memory, Recall, Context window (the page's settings and the
    // context engine's switches), and Advanced, folded (the engine's thresholds). Plain labels and help in the page's
    // language; internal names only in a tooltip.
    const SETTING_GROUPS = { namespace_mode: 'memory', block_turns: 'memory', model_route: 'memory', activation_recent_tokens: 'recall', activation_session_tokens: 'recall', activation_longterm_tokens: 'recall', context_mode: 'context', team_dsn: 'team', team_member: 'team' }
    const CONTEXT_SWITCHES = ['enabled', 'auto_fold', 'reminders', 'cost_aware', 'mid_turn_cards']
    let advancedOpen = false // kept across the tab's live refreshes
    function renderSettings(body, d, ctx, markDirty, markClean) {
      const values = d.settings || {}
      const fields = Array.isArray(d.fields) ? d.fields : Object.keys(values).map((name) => ({ name, type: typeof values[name] === 'number' ? 'int' : 'choice', default: values[name], source: 'default' }))
      const inputs = {}
      const initial = {}
      const numericField = {}
      const errors = {}
      const general = el('p', { class: 'sgm-error-text', role: 'alert' })
      const groups = { memory: [], recall: [], context: [], team: [], advanced: [] }
      for (const f of fields) {
        const id = nextId('set')
        const errId = id + '-err'
        let input
        const current = values[f.name] === null || values[f.name] === undefined ? '' : String(values[f.name])
        // A number field whose value is not a number is edited as text (the server's bounds still decide).
        const numeric = f.type === 'int' && (current === '' || /^-?\d+$/.test(current))
        if (f.type === 'choice' && Array.isArray(f.choices)) {
          const choices = f.choices.map(String)
          if (current && !choices.includes(current)) choices.push(current)
          input = el('select', { id, testid: 'setting-' + f.name, name: f.name, 'aria-describedby': errId }, choices.map((c) => el('option', { value: c }, knownLabel(lang, 'settings.choice.', c) || c)))
          input.value = current
        } else {
          input = el('input', {
            id,
            testid: 'setting-' + f.name,
            name: f.name,
            type: numeric ? 'number' : 'text',
            autocomplete: f.type === 'string' ? 'off' : undefined,
            spellcheck: f.type === 'string' ? 'false' : undefined,
            min: f.min === undefined ? undefined : String(f.min),
            max: f.max === undefined ? undefined : String(f.max),
            step: numeric ? '1' : undefined,
            value: current,
            'aria-describedby': errId,
          })
        }
        initial[f.name] = input.value
        numericField[f.name] = numeric
        input.addEventListener('input', markDirty)
        input.addEventListener('change', markDirty)
        inputs[f.name] = input
        errors[f.name] = el('p', { class: 'sgm-error-text', id: errId, role: 'alert' })
        // Label and help come with the field, in both languages, from the sidecar's settings table.
        const help = inLang(f.help, lang)
        const fallback = f.default === null || f.default === undefined ? '—' : knownLabel(lang, 'settings.choice.', f.default) || f.default
        const hints = [T('settings.source.' + (f.source || 'default')), T('settings.default', { value: fallback })]
        if (f.min !== undefined && f.max !== undefined) hints.push(T('settings.range', { min: f.min, max: f.max }))
        groups[SETTING_GROUPS[f.name] || 'advanced'].push(
          el(
            'div',
            { class: 'sgm-setting', data: { source: f.source || 'default' } },
            el('label', { for: id, title: f.name }, el('span', { class: 'sgm-strong' }, inLang(f.label, lang) || f.name)),
            input,
            help ? el('p', { class: 'sgm-small', testid: 'setting-help-' + f.name }, withCode(help)) : null,
            el('p', { class: 'sgm-muted sgm-small' }, hints.join(' · ')),
            errors[f.name],
          ),
        )
      }
      // The context engine's own settings (its switches, then its thresholds), when the server has them.
      const ctxSettings = ctx && ctx.settings ? ctx.settings : null
      const ctxInputs = {}
      if (ctxSettings) {
        for (const name of Object.keys(ctxSettings)) {
          if (name === 'mode') continue // the Context mode setting above is the same value
          const v = ctxSettings[name]
          const id = nextId('ctx')
          const isSwitch = typeof v === 'boolean'
          const input = isSwitch
            ? el('input', { type: 'checkbox', id, testid: 'context-' + name, checked: v })
            : el('input', { type: 'number', id, testid: 'context-' + name, step: 'any', value: String(v) })
          input.addEventListener('change', markDirty)
          ctxInputs[name] = input
          const help = knownLabel(lang, 'ctx.', name + '.help')
          const row = isSwitch
            ? el('div', { class: 'sgm-setting' }, el('label', { class: 'sgm-check', title: name }, input, el('span', { class: 'sgm-strong' }, knownLabel(lang, 'ctx.', name) || name)), help ? el('p', { class: 'sgm-small' }, help) : null)
            : el('div', { class: 'sgm-setting' }, el('label', { for: id, title: name }, el('span', {}, knownLabel(lang, 'ctx.', name) || name)), input)
          ;(isSwitch && CONTEXT_SWITCHES.includes(name) ? groups.context : groups.advanced).push(row)
        }
      } else if (ctx && ctx.error) groups.context.push(el('p', { class: 'sgm-muted sgm-small' }, T('settings.contextUnavailable', { error: ctx.error })))
      const save = button(T('app.save'), { class: 'sgm-btn sgm-btn-primary', testid: 'settings-save', type: 'submit' })
      const group = (name, rows) => (rows.length ? el('fieldset', { class: 'sgm-settings-group', testid: 'settings-group-' + name }, el('legend', {}, T('settings.group.' + name)), el('p', { class: 'sgm-muted sgm-small' }, T('settings.group.' + name + 'Help')), el('div', { class: 'sgm-settings' }, rows)) : null)
      const advanced = groups.advanced.length
        ? el('details', { class: 'sgm-settings-advanced', testid: 'settings-advanced', open: advancedOpen, on: { toggle: (e) => (advancedOpen = e.currentTarget.open) } }, el('summary', {}, T('settings.group.advanced')), el('p', { class: 'sgm-muted sgm-small' }, T('settings.group.advancedHelp')), el('div', { class: 'sgm-settings' }, groups.advanced))
        : null
      const form = el('form', { class: 'sgm-settings-form', testid: 'settings-form', novalidate: true }, group('memory', groups.memory), group('recall', groups.recall), group('context', groups.context), group('team', groups.team), advanced, general, el('div', { class: 'sgm-actions' }, save))
      form.addEventListener('submit', async (e) => {
        e.preventDefault()
        general.textContent = ''
        for (const n of Object.keys(errors)) {
          errors[n].textContent = ''
          inputs[n].removeAttribute('aria-invalid')
        }
        const changed = {}
        // Only what the user changed is sent (an empty number field resets it to its default: null).
        for (const f of fields) {
          const raw = inputs[f.name].value
          if (raw === initial[f.name]) continue
          // A number or text field left empty resets the setting to its default (null).
          changed[f.name] = numericField[f.name] ? (raw.trim() === '' ? null : Number(raw)) : f.type === 'string' && raw.trim() === '' ? null : raw
        }
        const ctxChanged = {}
        for (const [name, input] of Object.entries(ctxInputs)) {
          const now = input.type === 'checkbox' ? input.checked : input.value.trim() === '' ? null : Number(input.value)
          if (now !== ctxSettings[name]) ctxChanged[name] = now
        }
        if (!Object.keys(changed).length && !Object.keys(ctxChanged).length) {
          general.textContent = T('settings.unchanged')
          return
        }
        // The context engine's settings are not in the audit (no Undo there): ask first.
        if (Object.keys(ctxChanged).length && !(await confirmFirst(T('settings.group.context'), T('settings.confirmContext'), T('app.save')))) return
        save.disabled = true
        try {
          // A settings change is audited once (settings.changed, the database's): its toast offers Undo.
          let undoId = null
          if (Object.keys(changed).length) {
            const r = await post('/settings', { settings: changed })
            const ids = r && Array.isArray(r.audit_ids) ? r.audit_ids.filter(Number.isInteger) : []
            undoId = state.namespace && ids.length ? Math.max(...ids) : null
          }
          if (Object.keys(ctxChanged).length) await post('/context-settings', { settings: ctxChanged })
          toast(Object.keys(ctxChanged).length ? T('settings.contextSaved') : T('done.settings'), { undo: undoId })
          markClean()
          refreshTab()
        } catch (err) {
          const byField = fieldErrors(err.body, fields.map((f) => f.name))
          let any = false
          for (const [name, msg] of Object.entries(byField)) {
            if (name !== '_' && errors[name]) {
              errors[name].textContent = msg
              inputs[name].setAttribute('aria-invalid', 'true')
              any = true
            }
          }
          general.textContent = byField._ || (any ? T('settings.invalid') : err.message)
          save.disabled = false
        }
      })
      append(body, [section(T('settings.title'), el('p', { class: 'sgm-muted sgm-small' }, T('settings.note')), form)])
    }

    // ---------------------------------------------------------------- export and delete
    async function exportNs(format) {
      if (!state.namespace) return
      try {
        const r = await get('/export', { namespace: state.namespace, format })
        const blob = new win.Blob([r.content], { type: r.content_type || (format === 'json' ? 'application/json' : 'text/markdown') })
        const url = win.URL.createObjectURL(blob)
        const a = el('a', { href: url, download: r.filename || state.namespace + (format === 'json' ? '.json' : '.md'), class: 'sgm-hidden' })
        doc.body.appendChild(a)
        a.click()
        a.remove()
        later(() => win.URL.revokeObjectURL(url), 10000)
        toast(T('export.done', { filename: r.filename || '' }))
      } catch (err) {
        toast(T('action.failed', { error: err.message }), { error: true })
      }
    }
    function deleteNs() {
      const name = state.namespace
      if (!name) return
      dialog(T('delete.title', { name }), (box, close) => {
        const input = el('input', { type: 'text', testid: 'delete-confirm-input', autocomplete: 'off', spellcheck: 'false' })
        const err = el('p', { class: 'sgm-error-text', role: 'alert' })
        const go = button(T('delete.confirm'), {
          class: 'sgm-btn sgm-btn-danger',
          testid: 'delete-confirm-button',
          on: {
            click: async () => {
              go.disabled = true
              try {
                await post('/namespaces/delete', { namespace: name, confirm: input.value })
                close()
                toast(T('delete.done', { name }))
                state.namespace = null
                await loadNamespaces().catch(() => {})
                showTab(state.tab, true)
              } catch (e) {
                err.textContent = e.message
                go.disabled = false
              }
            },
          },
        })
        input.addEventListener('keydown', (e) => e.key === 'Enter' && go.click())
        append(box, [el('p', {}, T('delete.body')), el('label', { class: 'sgm-field' }, el('span', {}, T('delete.prompt') + ' '), code(name), input), err, el('div', { class: 'sgm-actions' }, go, button(T('app.cancel'), { testid: 'dialog-cancel', on: { click: close } }))])
      })
    }

    // ---------------------------------------------------------------- live updates: one long poll on GET /changes
    async function changesLoop() {
      let failures = 0
      while (!state.stopped) {
        try {
          const first = state.cursor === null
          const r = await get('/changes', first ? { wait: 0 } : { since: state.cursor, wait: 20 })
          if (state.stopped) return
          failures = 0
          liveDot.classList.remove('sgm-live-off')
          liveDot.title = T('app.live')
          state.cursor = r.cursor
          if (first) continue
          const plan = refetchPlan(state.tab, r.changed)
          if (plan.namespaces && state.tab !== 'overview') await loadNamespaces().catch(() => {})
          if (plan.tab) await refreshTab()
        } catch (err) {
          if (state.stopped) return
          failures++
          liveDot.classList.add('sgm-live-off')
          liveDot.title = T('app.offline')
          await pause(Math.min(30000, 1000 * 2 ** Math.min(failures, 5)))
        }
      }
    }

    // ---------------------------------------------------------------- start
    ;(async () => {
      try {
        await loadNamespaces()
      } catch (err) {
        renderNamespaces()
      }
      if (!state.stopped) showTab(opts.tab && TABS.includes(opts.tab) ? opts.tab : 'overview', true)
      if (!state.stopped) changesLoop()
    })()

    return {
      unmount() {
        state.stopped = true
        if (state.tabView) state.tabView.alive = false
        ctl.abort()
        for (const id of timers) win.clearTimeout(id)
        timers.clear()
        for (const d of dialogs) d.remove()
        rootEl.remove()
      },
    }
  }

  const api = {
    mount,
    _internals: { I18N, TABS, TAB_AREAS, EVENT_STATUSES, pickLang, translate, inLang, statusChip, humanBytes, humanDuration, shortTime, localTime, dateLocale, dateInputText, parseDateInput, happenedText, knownLabel, changeRows, refetchPlan, fieldErrors, queryString, layoutGraph, labelShift, undoTarget, denseLine, teamLines, isBookkeeping, byMessageOrder },
  }
  root.StrataGateMemoryPage = api

  // Standalone: <script src=".../memory-page.js" data-mount="body" data-api="..."> mounts itself (no inline script,
  // so a strict Content-Security-Policy holds). `?lang=zh` in the page address picks the language.
  const script = root.document && root.document.currentScript
  if (script && script.dataset && script.dataset.mount) {
    const start = () => {
      const target = root.document.querySelector(script.dataset.mount) || root.document.body
      const params = new URLSearchParams(root.location.search)
      mount(target, { api: script.dataset.api || '/api/stratagate/memory', lang: params.get('lang') || undefined, tab: params.get('tab') || undefined, namespace: params.get('namespace') || undefined })
    }
    if (root.document.readyState === 'loading') root.document.addEventListener('DOMContentLoaded', start)
    else start()
  }
})(typeof window !== 'undefined' ? window : globalThis)
