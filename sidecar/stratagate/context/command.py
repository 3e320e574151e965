"""The ``/memory`` slash command (``context.command``): status (long-term memory, the last recall, jobs and the
context window in one line), detail (the same with the context engine's figures in plain words; ``detail refs`` adds
the refs), recall (the last step's recall and why), search <words> (long-term memory and this session's archive,
grouped), purge (explains what it would delete), purge confirm (deletes this session's context archive and layers,
nothing else), help — answered in the UI language (English or Chinese)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from stratagate.context.engine_words import engine_lines
from stratagate.context.last_recall import Recalls
from stratagate.context.memory_counts import memory_counts
from stratagate.context.memory_search import search_text
from stratagate.context.memory_text import recall_lines, status_text
from stratagate.context.queries_views import archive_size, purge_session
from stratagate.context.settings import ContextSettings
from stratagate.context.status import Lang, context_status
from stratagate.protocol.types import Name, Result
from stratagate.storage.db import Database

MAX_ARGS = 2000

# Chinese users may type the subcommand in Chinese too.
_ALIASES = {
    "": "status",
    "status": "status",
    "状态": "status",
    "detail": "detail",
    "details": "detail",
    "详情": "detail",
    "search": "search",
    "搜索": "search",
    "查找": "search",
    "recall": "recall",
    "回忆": "recall",
    "purge": "purge",
    "清除": "purge",
    "help": "help",
    "帮助": "help",
    "?": "help",
}
_CONFIRM = {"confirm", "确认"}
_REFS = {"refs", "ref", "ids", "编号"}


class CommandParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    session: Name
    args: str = Field("", max_length=MAX_ARGS, description="What follows '/memory', e.g. 'search flaky test'.")
    lang: Lang = "en"


class CommandResult(Result):
    text: str


HELP = {
    "en": (
        "/memory shows what StrataGate remembers and what it recalled, and manages this session's context window.\n"
        "  /memory status          events, blocks, graph, the last recall and why, jobs, the context in one line\n"
        "  /memory detail          the same, with the context engine's figures (add 'refs' for decompress refs)\n"
        "  /memory recall          what the last step recalled, and why each item came\n"
        "  /memory search <words>  search long-term memory and this session's archived history\n"
        "  /memory purge           explains what purging deletes\n"
        "  /memory purge confirm   deletes this session's context archive (long-term memory stays)\n"
        "  /memory help            this help"
    ),
    "zh": (
        "/memory 显示 StrataGate 记住了什么、回忆了什么，并管理本会话的上下文窗口。\n"
        "  /memory status（状态）           事件、记忆块、知识图谱、最近一次回忆及原因、后台任务，以及一行上下文用量\n"
        "  /memory detail（详情）           同上，并附上上下文引擎的各项数字（加 refs 显示可还原的编号）\n"
        "  /memory recall（回忆）           上一步回忆了哪些记忆，以及各自的原因\n"
        "  /memory search <词语>（搜索）    搜索长期记忆和本会话的历史存档\n"
        "  /memory purge（清除）            说明清除会删除哪些内容\n"
        "  /memory purge confirm（确认）    删除本会话的上下文存档（长期记忆不受影响）\n"
        "  /memory help（帮助）             显示本帮助"
    ),
}


async def run_command(
    db: Database,
    keys: tuple[int, int] | None,
    params: CommandParams,
    settings: ContextSettings,
    recalls: Recalls | None = None,
    decay_lambda: float = 0.0,
) -> CommandResult:
    lang = params.lang
    text = params.args.strip()
    if text.split(" ", 1)[0].lower() == "/memory":  # the whole command line was passed on
        text = text[len("/memory") :].strip()
    head, _, rest = text.partition(" ")
    sub = _ALIASES.get(head.lower())
    rest = rest.strip()
    if sub is None:
        unknown = (
            f"“{head[:40]}”不是 /memory 的子命令。\n"
            if lang == "zh"
            else f"'{head[:40]}' is not a /memory subcommand.\n"
        )
        return CommandResult(text=unknown + HELP[lang])
    if sub == "help":
        return CommandResult(text=HELP[lang])
    last = recalls.get(params.namespace, params.session) if recalls is not None else None
    if sub == "recall":
        return CommandResult(text="\n".join(recall_lines(last, lang)))
    if sub in ("status", "detail"):
        status = await context_status(db, params.session, keys, settings, detail=sub == "detail", lang=lang)
        counts = await memory_counts(db, params.namespace, params.session, decay_lambda)
        text = status_text(counts, last, status, lang)
        if sub == "detail":
            text = "\n".join([text, *engine_lines(status, rest.lower() in _REFS, lang)])
        return CommandResult(text=text)
    if sub == "search":
        if not rest:
            ask = (
                "请在 search 后面写上要找的词语，例如：/memory search 测试失败"
                if lang == "zh"
                else ("Write the words to look for after search, e.g. /memory search failing test")
            )
            return CommandResult(text=ask)
        return CommandResult(text=await search_text(db, keys, params.namespace, params.session, rest[:2000], lang))
    return CommandResult(text=await _purge(db, keys, rest.lower() in _CONFIRM, lang))


async def _purge(db: Database, keys: tuple[int, int] | None, confirmed: bool, lang: Lang) -> str:
    size = await archive_size(db, keys[1]) if keys is not None else None
    if keys is None or size is None or not (size.nodes or size.layers):
        return (
            "本会话没有上下文存档，无需清除。"
            if lang == "zh"
            else "This session has no context archive: nothing to purge."
        )
    if not confirmed:
        if lang == "zh":
            return (
                f"清除会删除本会话的上下文存档：{size.nodes} 个存档节点和 {size.layers} 个替换层"
                "（工具卡片、折叠和记忆块视图）。删除之后，已经被替换的历史将无法再用 decompress 还原；"
                "已捕获的对话和长期记忆会保留。确定要删除的话，请输入 /memory purge confirm。"
            )
        return (
            f"Purging deletes this session's context archive: {size.nodes} archived nodes and {size.layers} layers "
            "(tool cards, folds and block views). Afterwards, history that was replaced can no longer be restored "
            "with decompress; captured conversations and long-term memory stay. "
            "To go ahead, type /memory purge confirm."
        )
    purged = await purge_session(db, keys[0], keys[1])
    if lang == "zh":
        return (
            f"已删除本会话的上下文存档：{purged.nodes} 个节点、{purged.layers} 个替换层。已捕获的对话和长期记忆都还在。"
        )
    return (
        f"Deleted this session's context archive: {purged.nodes} nodes and {purged.layers} layers. Captured "
        "conversations and long-term memory are still there."
    )
