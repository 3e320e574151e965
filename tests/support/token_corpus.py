"""Deterministic, offline ~1.1 MB tokenizer corpus: stdlib code, English prose, Chinese and mixed text.

Shared by ``tests/test_tokens.py`` and ``bench/bench_tokens.py``. Everything comes from the running
interpreter's stdlib or a seeded RNG, so the corpus is identical on every run of the same Python.
"""

from __future__ import annotations

import codecs
import contextlib
import importlib
import io
import random
import sysconfig
from pathlib import Path

MIN_CORPUS_BYTES = 1 << 20  # 1 MiB of UTF-8

_CODE_BUDGET = 460_000
_PROSE_BUDGET = 300_000
_PER_FILE_CAP = 24_000  # many small slices give more variety than a few huge modules

_SPECIAL_TEXT = ("<｜end▁of▁sentence｜>", "<｜begin▁of▁sentence｜>", "<think>", "</think>", "<｜User｜>")

_ZH_SENTENCES = (
    "今天天气很好，我们一起去公园散步吧！",
    "深度学习模型的上下文窗口长度决定了它一次能处理多少信息。",
    "请把第3章的内容总结成不超过200字的摘要，并列出关键术语。",
    "他说：“这个版本的分词器比旧版本快了十倍以上。”",
    "《红楼梦》是中国古典小说的巅峰之作，共120回。",
    "会议定于2024年5月17日下午3点在北京召开，预计持续两个小时。",
    "用户的长期记忆需要压缩、去重，再按时间和主题建立索引。",
    "如果出现错误，请检查配置文件config.toml中的timeout参数。",
    "这家店的招牌菜是麻婆豆腐和宫保鸡丁，价格大约在￥35到￥68之间。",
    "東京タワーの近くで、ラーメンを食べました。とても美味しかったです！",
    "机器学习（Machine Learning）是人工智能的一个分支，GPT-4和DeepSeek-V3都是大语言模型。",
    "第一步：安装依赖；第二步：运行测试；第三步：提交代码。",
    "全角数字１２３４５６７８９０和半角数字1234567890在分词时表现不同。",
    "“引号”、『书名号』、【方括号】以及……省略号——破折号都要覆盖到。",
)

_WORLD = (
    "Привет, мир! Это тест токенизатора.",
    "Γειά σου κόσμε, αυτό είναι ένα τεστ.",
    "مرحبا بالعالم، هذا اختبار.",
    "שלום עולם, זה מבחן.",
    "안녕하세요 세계, 이것은 테스트입니다.",
    "สวัสดีชาวโลก นี่คือการทดสอบ",
    "नमस्ते दुनिया, यह एक परीक्षण है।",
    "Ça va? Déjà vu, naïve café, São Paulo, Zürich, Øresund, Łódź.",
    "e\u0301 a\u0308 n\u0303 combining marks, ﬁ ligature, ＡＢＣ full-width, ½ ⅓ Ⅻ ² numerals.",
)

_EMOJI = ("😀", "👍🏽", "👨‍👩‍👧‍👦", "🇨🇳", "🇺🇸", "❤️", "🔥", "🚀", "✅", "🤖", "🧠", "☕", "🎉", "🙏🏻", "💯")

_SPACES = (
    " ",
    "  ",
    "   ",
    "    ",
    "        ",
    "\t",
    "\t\t",
    " \t ",
    "\n",
    "\n\n",
    "\n\n\n",
    "\r\n",
    "\r\n\r\n",
    "  \n",
    " \n  \n",
    "\u00a0",
    "\u3000",
    "\u2028",
    "\x0b",
    "\x0c",
)

_ODD = ("\u200b", "\ufeff", "\x00", "\x1c", "\x1f", "\x7f", "\u00ad", "\u2060", "\U000e0001", "\ue000")

# Boundaries of the pre-tokenizer: kana-block code points that are not letters (marks, ゛゜゠・,
# unassigned 3040/3097/3098), CJK next to digits/Latin/ext-A, runs of control chars, whitespace runs.
_EDGES = (
    "\u3040",
    "\u3097\u3098ア",
    "\u3040\u3040あ",
    "゛゜",
    "゠・ー",
    "か\u3099",
    "\u3099\u309a",
    "中\u3040。",
    "龥龦㐀",
    "中1文２",
    "ab\x00\x01cd",
    "\x00\x01",
    "x  \n  \n y",
    " \t\n\t ",
    "  !!\r\n",
    "'s 've",
)


def _stdlib_code() -> list[tuple[str, str]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    out: list[tuple[str, str]] = []
    used = 0
    for path in sorted(root.glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")[:_PER_FILE_CAP]
        if len(out) % 7 == 3:
            text = text.replace("\n", "\r\n")  # CRLF files
        elif len(out) % 7 == 5:
            text = text.replace("    ", "\t")  # tab-indented files
        out.append((f"code:{path.name}", text))
        used += len(text.encode("utf-8"))
        if used >= _CODE_BUDGET:
            break
    return out


def _english_prose() -> list[tuple[str, str]]:
    with contextlib.redirect_stdout(io.StringIO()):  # `import this` prints the Zen
        this = importlib.import_module("this")
    out = [("prose:zen", codecs.decode(this.s, "rot13"))]
    topics = importlib.import_module("pydoc_data.topics").topics
    used = 0
    for key in sorted(topics):
        out.append((f"prose:{key}", topics[key]))
        used += len(topics[key].encode("utf-8"))
        if used >= _PROSE_BUDGET:
            break
    return out


def _pool() -> list[str]:
    ranges = [
        (0x4E00, 0x9FFF),
        (0x4E00, 0x9FA5),
        (0x4E00, 0x6FFF),
        (0x3400, 0x4DBF),
        (0x3040, 0x30FF),  # whole kana block: marks, ゛゜゠・ and the unassigned 3040/3097/3098
        (0xFF10, 0xFF19),
        (0xFF21, 0xFF3A),
        (0xAC00, 0xD7A3),
    ]
    return [chr(c) for lo, hi in ranges for c in range(lo, hi + 1)]


def _number(rng: random.Random) -> str:
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 25)))
    return rng.choice(
        [
            digits,
            f"-{digits}",
            f"{digits}.{rng.randint(0, 999)}",
            f"{int(digits):,}",
            f"{rng.random():.6e}",
            f"0x{int(digits):X}",
            f"v{rng.randint(0, 9)}.{rng.randint(0, 20)}",
        ]
    )


def _mixed_text(seed: int, target_bytes: int) -> str:
    rng = random.Random(seed)
    pool = _pool()  # also Ext-A, kana, full-width, Hangul; 0x9FA6+ sits outside the CJK split class
    cjk = [chr(c) for c in range(0x4E00, 0xA000)]
    punct = "。，！？、；：“”‘’（）《》「」【】…—·ー・"
    parts: list[str] = []
    size = 0
    while size < target_bytes:
        kind = rng.random()
        if kind < 0.40:  # pseudo-random Chinese sentence
            n = rng.randint(2, 40)
            chars = [rng.choice(cjk) if rng.random() < 0.8 else rng.choice(pool) for _ in range(n)]
            for _ in range(rng.randint(0, 3)):
                chars.insert(rng.randint(0, len(chars)), rng.choice(punct))
            piece = "".join(chars) + rng.choice("。，！？、")
        elif kind < 0.60:
            piece = rng.choice(_ZH_SENTENCES)
        elif kind < 0.68:
            piece = rng.choice(_WORLD)
        elif kind < 0.76:
            piece = _number(rng)
        elif kind < 0.82:
            piece = "".join(rng.choice(_EMOJI) for _ in range(rng.randint(1, 4)))
        elif kind < 0.92:
            piece = rng.choice(_SPACES) * rng.randint(1, 3)
        elif kind < 0.96:
            piece = rng.choice(_ODD + _EDGES) + rng.choice(("", "x", "中", "1", " ", "ア"))
        elif kind < 0.98:
            piece = rng.choice(_SPECIAL_TEXT)
        else:
            piece = f"def f_{rng.randint(0, 99)}(x):\n    return x * {rng.randint(0, 9999)}  # 注释\n"
        sep = rng.choice(("", "", "", " ", "\n"))
        parts.append(piece + sep)
        size += len(piece.encode("utf-8")) + len(sep)
    return "".join(parts)


def build_corpus() -> list[tuple[str, str]]:
    """Labelled segments; their UTF-8 size adds up to at least MIN_CORPUS_BYTES."""
    segments = _stdlib_code() + _english_prose()
    used = sum(len(text.encode("utf-8")) for _, text in segments)
    segments.append(("mixed:zh", _mixed_text(seed=20240517, target_bytes=max(MIN_CORPUS_BYTES - used, 0) + 64_000)))
    return segments


def corpus_chunks(chunk_chars: int = 4000) -> list[tuple[str, str]]:
    """The corpus cut into independent chunks (label@offset, text) so failures point at a small input."""
    return [
        (f"{label}@{start}", text[start : start + chunk_chars])
        for label, text in build_corpus()
        for start in range(0, len(text), chunk_chars)
    ]


def corpus_bytes(chunks: list[tuple[str, str]]) -> int:
    return sum(len(text.encode("utf-8")) for _, text in chunks)
