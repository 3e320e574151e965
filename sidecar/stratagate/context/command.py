"""The ``/memory`` slash command (``context.command``): status, detail, search <words>, purge (explains what it
would delete), purge confirm (deletes this session's context archive and layers, nothing else), help — answered in
the UI language (English or Chinese)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from stratagate.context.queries_views import archive_size, purge_session
from stratagate.context.search import SearchArgs, search_context
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
    "purge": "purge",
    "清除": "purge",
    "help": "help",
    "帮助": "help",
    "?": "help",
}
_CONFIRM = {"confirm", "确认"}


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
        "/memory manages this session's context window.\n"
        "  /memory status          what the context holds now and what the engine saved\n"
        "  /memory detail          the same, with every foldable range and pending fold\n"
        "  /memory search <words>  search this session's archived history; each hit shows how to restore it\n"
        "  /memory purge           explains what purging deletes\n"
        "  /memory purge confirm   deletes this session's context archive (long-term memory stays)\n"
        "  /memory help            this help"
    ),
    "zh": (
        "/memory 用于管理本会话的上下文窗口。\n"
        "  /memory status（状态）           查看当前上下文的构成，以及已经节省了多少 token\n"
        "  /memory detail（详情）           同上，并列出每一段可折叠的内容和待生效的折叠\n"
        "  /memory search <词语>（搜索）    在本会话的历史存档中搜索，每条结果都会说明如何还原原文\n"
        "  /memory purge（清除）            说明清除会删除哪些内容\n"
        "  /memory purge confirm（确认）    删除本会话的上下文存档（长期记忆不受影响）\n"
        "  /memory help（帮助）             显示本帮助"
    ),
}


async def run_command(
    db: Database, keys: tuple[int, int] | None, params: CommandParams, settings: ContextSettings
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
    if sub in ("status", "detail"):
        status = await context_status(db, params.session, keys, settings, detail=sub == "detail", lang=lang)
        return CommandResult(text=status.text)
    if sub == "search":
        if not rest:
            ask = (
                "请在 search 后面写上要找的词语，例如：/memory search 测试失败"
                if lang == "zh"
                else ("Write the words to look for after search, e.g. /memory search failing test")
            )
            return CommandResult(text=ask)
        found = await search_context(db, keys, SearchArgs(query=rest[:2000], limit=8), lang)
        return CommandResult(text=found.text)
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
