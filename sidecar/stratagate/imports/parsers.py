"""Parsing layer for memory imports: one file in, one validated :class:`ImportBatch` out.

Nothing here writes anything. Storage, events, the graph, the CLI and import removal belong to the caller.

Public API
==========
* :func:`detect_format` (path) and :func:`detect_text_format` (text) name a format;
* :func:`parse_file` (path, format=None) and :func:`parse_text` (text, format=None, source_name) parse;
* :class:`ImportItem`, :class:`ImportBatch` are the results; :class:`ImportFormatError` (a ``ValueError``) is the one
  error, and its message always starts with the file (or source) name and then says what is wrong.

Formats and decisions
=====================
Common to every format
    * Input must be UTF-8 (a leading byte-order mark is allowed), at most :data:`MAX_IMPORT_BYTES` (20 MiB, checked
      before reading), and free of NUL characters. UTF-16/32 files are refused with a hint to re-save them as UTF-8.
    * ``ImportBatch.source_text`` is the decoded file exactly as it was (BOM and CR/LF line endings included), so
      ``source_sha256`` (always the SHA-256 of ``source_text`` in UTF-8) equals the SHA-256 of the file's bytes for
      every text format. For SQLite, ``source_text`` is a deterministic JSON dump of the rows read (sorted keys).
    * Items keep the source's order (SQLite: ``ORDER BY created_at, id``).
    * Timestamps become aware UTC datetimes. A naive ISO timestamp is taken to be UTC. A bare number is an epoch:
      milliseconds if its magnitude is at least 1e11, else seconds (dsh-memory-connect's ``created_at`` is always ms).
      An unparseable timestamp gives ``created_at=None``, a warning, and the raw value in ``extra``.
    * Anything skipped (empty entries, code blocks, prose around a ChatGPT code block, bad tags JSON …) is reported
      in ``ImportBatch.warnings``. A file that yields no item at all raises :class:`ImportFormatError`.

Markdown (``markdown``) — one item per bullet (``-`` ``*`` ``+`` and ``•`` ``◦`` ``▪`` ``‣`` ``●`` ``·`` ``∙``
``–`` ``—``), numbered item (``1.`` / ``1)``) or other non-empty line.
    * The list marker (and a ``>`` quote prefix) is removed; the rest of the item is kept verbatim: the item text is
      always an exact slice of ``source_text`` (``extra["span"]`` holds its ``[start, end)`` offsets), trimmed only of
      surrounding whitespace. Task boxes (``[ ]``), emphasis and links stay as written.
    * An indented non-marker line directly under a bullet or numbered item is a wrapped continuation: it is merged
      into that item, whose text then spans several lines (verbatim, with the original line break and indentation;
      ``ImportItem.flat_text`` gives the one-line form). A blank line ends an item; an unindented line starts a new
      one; an indented *marker* line is a nested item of its own.
    * ATX (``#`` … ``######``) and setext (``===`` / ``---`` underline) headings are not items; the texts of the
      headings enclosing an item, outermost first, become its ``tags``.
    * Skipped: blank lines, horizontal rules, a leading YAML front-matter block, and fenced code blocks (code is not
      a memory statement, and line-splitting it would produce junk). Each skipped code block gives a warning.
    * Struck-out Markdown (``~~…~~``, :mod:`stratagate.imports.strike`): each item records its struck spans
      (``struck_spans``) and whether the whole item is struck (``struck_out``: only annotations such as ``(old)``
      are left outside the strike). The parser keeps such items (the caller skips and reports them); a partly
      struck item's ``current_text`` leaves the struck words out. ``chatgpt`` text is read the same way; ``text``
      interprets nothing. A line with a strike counts as Markdown for detection.

ChatGPT (``chatgpt``) — the "Manage memories" list copied as text: one memory per line, optionally bulleted.
    * Parsed like Markdown, plus: header lines such as ``Memories``, ``ChatGPT memories``, ``Saved memories``,
      ``Manage memories`` (with or without ``#``, ``**`` or a trailing colon/count) are not items and not tags.
    * ``[2025-01-15] - text`` entries (the shape Claude's "import memory" prompt asks ChatGPT for) have the
      bracketed date moved into ``created_at`` (``extra["date_prefix"]`` keeps it); ``[unknown] - text`` loses the
      prefix with no date. A bracket that is not a date stays part of the text.
    * If the text contains fenced code blocks (ChatGPT's answer to that prompt is one code block), only the lines
      inside them are memories; the prose around them is ignored with a warning.
    * JSON variant (best effort; OpenAI documents no memory export format): a list of strings, or of objects with
      ``content``/``text`` (``enabled: false`` becomes ``status="disabled"``), possibly under ``results``/``memories``.

Mem0 (``mem0``) — ``client.get_all()``/``Memory.get_all()``/search output as JSON or JSON Lines: a list of objects,
or an object with a ``results`` or ``memories`` list (a single memory object is accepted too).
    * ``memory`` → ``text`` (verbatim; an entry without ``memory`` falls back to ``text``/``content``, and a bare
      string entry is its own text); ``id`` → ``external_id``; ``created_at`` → ``created_at``; ``categories`` (and
      any ``tags`` list) → ``tags``; ``state``/``status`` → ``status``.
    * ``kind`` = the entry's own ``type``/``kind``/``category``, else ``metadata.type``/``kind``/``category``, else
      the first category.
    * Every other field (``metadata``, ``hash``, ``user_id``, ``updated_at`` …) is kept in ``extra`` under its own
      name. Entries with an empty or non-string ``memory``, or that are not objects, are skipped with a warning.

Detection and forcing
    * :func:`detect_format` / ``format=None``: SQLite header → ``dsh-memory-connect``; valid JSON or JSON Lines →
      ``mem0`` if any entry has ``memory``, else ``chatgpt`` (its JSON variant), else a wrong-shape error; text →
      ``chatgpt`` if its first line is a ChatGPT header, if at least half its lines are ``[date] - …`` entries, or if
      it is mostly one code block with at most 3 lines of prose around it; else ``markdown`` if it has a heading,
      bullet, numbered item or quote; else ``text``. ``.json``/``.jsonl``/``.ndjson`` files must be valid JSON.
    * An explicit ``format`` wins: ``text``/``markdown`` on a JSON file parse its lines; ``mem0`` on non-JSON and a
      SQLite/text mismatch are errors.

Plain text (``text``) — one item per non-empty line, trimmed, nothing else interpreted (no marker stripping).

dsh-memory-connect (``dsh-memory-connect``) — its SQLite store (``~/.dsh/memory.db``, v0.4.0 schema).
    * Recognised by the ``SQLite format 3\\0`` header and a ``memories`` table with at least ``id``, ``content`` and
      ``created_at``; other documented columns may be missing (warning). A foreign ``application_id`` (not
      0x4D454D30) or ``user_version`` (not 1) only warns.
    * Opened read-only (``file:…?mode=ro``); if that fails, retried once as ``immutable=1`` with a warning.
    * Every row is returned whatever its status (``active``/``consolidated``/``decayed``/``archived``), with
      ``status`` set, so the caller decides. ``type`` → ``kind``, ``tags`` (JSON text; bad JSON warns and keeps the
      raw text in ``extra["tags_raw"]``) → ``tags``, ``id`` → ``external_id``, ``created_at`` (INTEGER ms) →
      ``created_at``; the remaining columns go to ``extra``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from stratagate.errors import DomainError
from stratagate.imports.strike import is_struck_out, struck_spans, without_spans

__all__ = [
    "FORMATS",
    "MAX_IMPORT_BYTES",
    "TEXT_FORMATS",
    "ImportBatch",
    "ImportFormat",
    "ImportFormatError",
    "ImportItem",
    "detect_format",
    "detect_text_format",
    "parse_file",
    "parse_text",
    "sha256_text",
]

ImportFormat = Literal["mem0", "chatgpt", "markdown", "text", "dsh-memory-connect"]
FORMATS: Final[tuple[str, ...]] = get_args(ImportFormat)
TEXT_FORMATS: Final[tuple[str, ...]] = ("mem0", "chatgpt", "markdown", "text")
MAX_IMPORT_BYTES: Final = 20 * 1024 * 1024

SQLITE_HEADER: Final = b"SQLite format 3\x00"
DSH_MEMORY_APPLICATION_ID: Final = 0x4D454D30  # "MEM0"
DSH_MEMORY_USER_VERSION: Final = 1
DSH_MEMORY_COLUMNS: Final = (
    "id",
    "type",
    "content",
    "session_id",
    "source_event_seq",
    "created_at",
    "last_accessed_at",
    "access_count",
    "relevance_score",
    "tags",
    "parent_memory_id",
    "status",
    "content_hash",
)
DSH_MEMORY_REQUIRED: Final = ("id", "content", "created_at")
DSH_MEMORY_TYPES: Final = frozenset({"fact", "preference", "context", "decision", "skill"})
DSH_MEMORY_STATUSES: Final = frozenset({"active", "consolidated", "decayed", "archived"})

_BOM: Final = "\ufeff"
_MAX_WARNINGS: Final = 200
_JSON_EXTENSIONS: Final = frozenset({".json", ".jsonl", ".ndjson"})


class ImportFormatError(DomainError, ValueError):
    """The input cannot be imported. ``str(exc)`` is ``"<source>: <what is wrong>"``; the one error mapping sends
    it as -32602 with that message."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: {problem}")
        self.source = source
        self.problem = problem


# --------------------------------------------------------------------------------------------------------------
# Models


def sha256_text(text: str) -> str:
    """The batch checksum: SHA-256 of the text in UTF-8 (for a text file, the SHA-256 of its bytes)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _json_problem(value: Any, where: str, depth: int = 0) -> str | None:
    """Why ``value`` is not plain JSON data (str keys, finite floats, lists not tuples), or None if it is."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} is {value}"
    if depth > 100:
        return "it is nested more than 100 levels deep"
    if isinstance(value, list):
        for index, child in enumerate(value):
            if problem := _json_problem(child, f"{where}[{index}]", depth + 1):
                return problem
        return None
    if isinstance(value, dict):
        for key, child in value.items():
            if not isinstance(key, str):
                return f"{where} has a non-string key {key!r}"
            if problem := _json_problem(child, f"{where}.{key}", depth + 1):
                return problem
        return None
    return f"{where} is a {type(value).__name__}"


def _is_utf8_safe(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class ImportItem(BaseModel):
    """One memory taken from an import source."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(min_length=1, description="The item's text exactly as in the source (never blank).")
    source_ref: str = Field(
        min_length=1, description='Where it came from: "line 12", "$.results[3]", "memories row id=…".'
    )
    created_at: datetime | None = Field(default=None, description="Aware UTC; naive source values are taken as UTC.")
    kind: str | None = Field(default=None, description="The source's type/category, e.g. 'preference'.")
    tags: list[str] = Field(default_factory=list)
    external_id: str | None = None
    status: str | None = Field(default=None, description="The source's status, e.g. 'archived'; None if it has none.")
    extra: dict[str, Any] = Field(default_factory=dict, description="Other source fields; JSON-serialisable.")
    struck_spans: list[tuple[int, int]] = Field(
        default_factory=list, description="Markdown ``~~…~~`` runs in ``text``, as [start, end) offsets into it."
    )
    struck_out: bool = Field(default=False, description="The whole item is struck out (imports skip it).")

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("text must contain a non-whitespace character")
        if not _is_utf8_safe(value):
            raise ValueError("text contains an unpaired surrogate (not valid Unicode)")
        return value

    @field_validator("created_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    @field_validator("tags")
    @classmethod
    def _clean_tags(cls, value: list[str]) -> list[str]:
        out: list[str] = []
        for tag in value:
            tag = tag.strip()
            if tag and tag not in out:
                out.append(tag)
        return out

    @field_validator("kind", "status", "external_id")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        return value or None

    @field_validator("extra")
    @classmethod
    def _json_serialisable(cls, value: dict[str, Any]) -> dict[str, Any]:
        problem = _json_problem(value, "extra")
        if problem:
            raise ValueError(f"extra must be plain JSON data: {problem}")
        return value

    @model_validator(mode="after")
    def _spans_inside(self) -> ImportItem:
        if any(not 0 <= start < end <= len(self.text) for start, end in self.struck_spans):
            raise ValueError("struck_spans must lie inside text")
        if self.struck_out and not self.struck_spans:
            raise ValueError("struck_out needs struck_spans")
        return self

    @property
    def flat_text(self) -> str:
        """``text`` with every whitespace run (including a wrapped bullet's line breaks) collapsed to one space."""
        return " ".join(self.text.split())

    @property
    def current_text(self) -> str:
        """``flat_text`` without its struck-out words: what the item still states (``We use ~~npm~~ pnpm`` →
        ``We use pnpm``)."""
        return without_spans(self.text, self.struck_spans) if self.struck_spans else self.flat_text


class ImportBatch(BaseModel):
    """Everything parsed from one import source."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: ImportFormat
    source_name: str = Field(min_length=1)
    source_text: str = Field(description="Verbatim file text; for SQLite a deterministic JSON dump of the rows read.")
    source_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    items: list[ImportItem] = Field(min_length=1)
    warnings: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _checksum_matches(self) -> ImportBatch:
        if sha256_text(self.source_text) != self.source_sha256:
            raise ValueError("source_sha256 is not the SHA-256 of source_text")
        return self


# --------------------------------------------------------------------------------------------------------------
# Public functions


def detect_format(path: str | Path, *, max_bytes: int = MAX_IMPORT_BYTES) -> ImportFormat:
    """Name the format of the file at ``path``; raise :class:`ImportFormatError` if it cannot be imported.

    SQLite (by header) with a ``memories`` table → ``dsh-memory-connect``; JSON → ``mem0`` (objects with ``memory``)
    or ``chatgpt`` (strings / ``content`` objects); other text → ``chatgpt``, ``markdown`` or ``text``
    (see :func:`detect_text_format`).
    """
    file = Path(path)
    display = str(path)
    _check_size(file, display, max_bytes)
    if _read_header(file, display) == SQLITE_HEADER:
        with _open_dsh_store(file, display, _Warnings()):
            return "dsh-memory-connect"
    text = _decode(_read_bytes(file, display, max_bytes), display)
    return _detect_text(text, display, json_expected=file.suffix.lower() in _JSON_EXTENSIONS)


def detect_text_format(text: str, source_name: str = "<text>") -> ImportFormat:
    """Name the format of already-decoded text (any format but ``dsh-memory-connect``).

    Heuristics, in order: valid JSON (or JSON Lines) → ``mem0``/``chatgpt`` by shape; a ChatGPT header first line,
    mostly ``[date] - …`` entries, or a lone code block with little text around it → ``chatgpt``; any heading,
    bullet or numbered item → ``markdown``; otherwise ``text``.
    """
    _check_text(text, source_name, MAX_IMPORT_BYTES)
    return _detect_text(text, source_name, json_expected=False)


def parse_file(path: str | Path, format: str | None = None, *, max_bytes: int = MAX_IMPORT_BYTES) -> ImportBatch:
    """Parse the file at ``path`` (format detected unless given). ``source_name`` is the file's base name."""
    file = Path(path)
    display = str(path)
    fmt = _check_format_name(format, display)
    _check_size(file, display, max_bytes)
    is_sqlite = _read_header(file, display) == SQLITE_HEADER
    if is_sqlite:
        if fmt not in (None, "dsh-memory-connect"):
            raise ImportFormatError(display, f"is a SQLite database, not a {fmt} export")
        return _parse_dsh_store(file, display)
    if fmt == "dsh-memory-connect":
        raise ImportFormatError(display, "is not a SQLite database (no 'SQLite format 3' header)")
    text = _decode(_read_bytes(file, display, max_bytes), display)
    json_expected = file.suffix.lower() in _JSON_EXTENSIONS
    return _parse_decoded(text, fmt, file.name or display, display, json_expected=json_expected)


def parse_text(text: str, format: str | None = None, source_name: str = "<text>") -> ImportBatch:
    """Parse decoded text in one of :data:`TEXT_FORMATS` (detected when ``format`` is None)."""
    name = source_name or "<text>"
    fmt = _check_format_name(format, name)
    if fmt == "dsh-memory-connect":
        raise ImportFormatError(name, "dsh-memory-connect is a SQLite store; use parse_file() on the database file")
    _check_text(text, name, MAX_IMPORT_BYTES)
    return _parse_decoded(text, fmt, name, name, json_expected=False)


# --------------------------------------------------------------------------------------------------------------
# Reading and decoding


class _Warnings:
    """Collects warnings, keeping at most ``_MAX_WARNINGS`` (then one line saying how many were dropped)."""

    def __init__(self) -> None:
        self._items: list[str] = []
        self._dropped = 0

    def add(self, message: str) -> None:
        if len(self._items) < _MAX_WARNINGS:
            self._items.append(message)
        else:
            self._dropped += 1

    def result(self) -> list[str]:
        tail = [f"… and {self._dropped} more warning(s)"] if self._dropped else []
        return [*self._items, *tail]


def _check_format_name(format: str | None, display: str) -> ImportFormat | None:
    if format is None:
        return None
    if format not in FORMATS:
        raise ImportFormatError(display, f"unknown import format {format!r}; expected one of {', '.join(FORMATS)}")
    return cast(ImportFormat, format)


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"


def _check_size(file: Path, display: str, max_bytes: int) -> None:
    try:
        info = file.stat()
    except FileNotFoundError:
        raise ImportFormatError(display, "file not found") from None
    except OSError as exc:
        raise ImportFormatError(display, f"cannot read file: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(info.st_mode):
        raise ImportFormatError(display, "is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise ImportFormatError(display, "is not a regular file")
    if info.st_size > max_bytes:
        raise ImportFormatError(display, f"file is too large ({_mib(info.st_size)}; the limit is {_mib(max_bytes)})")


def _read_header(file: Path, display: str) -> bytes:
    try:
        with file.open("rb") as handle:
            return handle.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise ImportFormatError(display, f"cannot read file: {exc.strerror or exc}") from exc


def _read_bytes(file: Path, display: str, max_bytes: int) -> bytes:
    try:
        with file.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise ImportFormatError(display, f"cannot read file: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:  # grew since stat()
        raise ImportFormatError(display, f"file is too large (over {_mib(max_bytes)})")
    return data


def _decode(data: bytes, display: str) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ImportFormatError(display, "is UTF-16/UTF-32 encoded; re-save it as UTF-8")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportFormatError(
            display, f"is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); re-save it as UTF-8"
        ) from None
    if "\x00" in text:
        raise ImportFormatError(display, "contains NUL bytes; it looks like a binary file, not a text export")
    return text


def _check_text(text: str, display: str, max_bytes: int) -> None:
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ImportFormatError(
            display, f"contains an unpaired surrogate at index {exc.start} (not valid text)"
        ) from None
    if size > max_bytes:
        raise ImportFormatError(display, f"text is too large ({_mib(size)}; the limit is {_mib(max_bytes)})")
    if "\x00" in text:
        raise ImportFormatError(display, "contains NUL characters; it looks like binary data, not a text export")


def _no_items(display: str, fmt: str, warnings: _Warnings) -> ImportFormatError:
    seen = warnings.result()
    detail = f" ({len(seen)} warning(s): {'; '.join(seen[:3])}{'; …' if len(seen) > 3 else ''})" if seen else ""
    return ImportFormatError(display, f"no memory items found ({fmt} format){detail}")


def _batch(fmt: ImportFormat, name: str, source: str, items: list[ImportItem], warnings: _Warnings) -> ImportBatch:
    return ImportBatch(
        format=fmt,
        source_name=name,
        source_text=source,
        source_sha256=sha256_text(source),
        items=items,
        warnings=warnings.result(),
    )


def _parse_decoded(text: str, fmt: ImportFormat | None, name: str, display: str, *, json_expected: bool) -> ImportBatch:
    warnings = _Warnings()
    if not text.lstrip(_BOM).strip():
        raise ImportFormatError(display, "is empty: no memory items to import")
    doc: _JsonDoc | None = None
    if fmt is None:
        doc = _try_json(text, display, required=json_expected)
        if doc is not None:
            fmt = _json_format(doc, display)
        else:
            fmt = _detect_plain(text)
    elif fmt in ("mem0", "chatgpt"):
        doc = _try_json(text, display, required=fmt == "mem0" or json_expected)
    if doc is not None and fmt in ("mem0", "chatgpt"):  # format="text"/"markdown" on JSON: the caller wants lines
        if doc.entries is None:
            _json_format(doc, display)  # raises: wrong shape
        items = _json_items(doc, fmt, warnings)
        if not items:
            raise _no_items(display, fmt, warnings)
        return _batch(fmt, name, text, items, warnings)
    items = _line_items(text, cast(Literal["chatgpt", "markdown", "text"], fmt), warnings)
    if not items:
        raise _no_items(display, fmt, warnings)
    return _batch(fmt, name, text, items, warnings)


def _detect_text(text: str, display: str, *, json_expected: bool) -> ImportFormat:
    if not text.lstrip(_BOM).strip():
        raise ImportFormatError(display, "is empty: no memory items to import")
    doc = _try_json(text, display, required=json_expected)
    if doc is not None:
        return _json_format(doc, display)
    return _detect_plain(text)


# --------------------------------------------------------------------------------------------------------------
# Timestamps


_DATE_FORMATS: Final = (
    "%Y/%m/%d",
    "%Y.%m.%d",
    "%B %d, %Y",
    "%b %d, %Y",
    "%d %B %Y",
    "%d %b %Y",
    "%Y年%m月%d日",
)
_UNKNOWN_DATES: Final = frozenset(
    {
        "unknown",
        "date unknown",
        "unknown date",
        "no date",
        "undated",
        "n/a",
        "na",
        "none",
        "not available",
        "date not available",
        "unavailable",
        "date saved, if available",
        "-",
        "?",
    }
)


def _from_epoch(value: float, unit: Literal["auto", "ms"]) -> datetime | None:
    if not math.isfinite(value):
        return None
    seconds = value / 1000 if unit == "ms" or abs(value) >= 1e11 else value
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _parse_datetime_text(text: str) -> datetime | None:
    text = text.strip()
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        for pattern in _DATE_FORMATS:
            try:
                parsed = datetime.strptime(text, pattern)
                break
            except ValueError:
                continue
        else:
            return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _parse_timestamp(value: Any, unit: Literal["auto", "ms"] = "auto") -> datetime | None:
    """A timestamp from JSON/SQLite: epoch number (or numeric string) or ISO-like text; None if unusable."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        try:
            return _from_epoch(float(value), unit)
        except OverflowError:  # an int too large for a float
            return None
    if isinstance(value, str):
        stripped = value.strip()
        if re.fullmatch(r"-?\d{1,20}(?:\.\d{1,9})?", stripped):
            return _from_epoch(float(stripped), unit)
        return _parse_datetime_text(stripped)
    return None


# --------------------------------------------------------------------------------------------------------------
# Text formats: markdown, chatgpt, text


@dataclass(frozen=True, slots=True)
class _Line:
    number: int  # 1-based
    start: int  # offset of ``body`` in the source text
    body: str  # the line without its terminator (and without a leading BOM)


_BREAK = re.compile(r"\r\n|\r|\n")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")
_HRULE = re.compile(r"^ {0,3}([-*_=])(?:[ \t]*\1){2,}[ \t]*$")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(={2,}|-{2,})[ \t]*$")
_QUOTE = re.compile(r" {0,3}>[ \t]?")  # no "^": used with match(body, pos)
_BULLET = re.compile(r"([ \t]*)(?:[-*+–—]\s+|[•◦▪‣●·∙]\s*)(?=\S)")
_NUMBERED = re.compile(r"([ \t]*)\d{1,9}[.)]\s+(?=\S)")
_EMPTY_MARKER = re.compile(r"^[ \t]*(?:[-*+•◦▪‣●·∙–—]|\d{1,9}[.)])[ \t]*$")
_DATE_PREFIX = re.compile(r"^\[([^\]\r\n]{1,60})\][ \t]*(?:[-–—:][ \t]*)?(?=\S)")
_CHATGPT_HEADERS: Final = frozenset(
    {
        "memory",
        "memories",
        "my memories",
        "saved memories",
        "stored memories",
        "manage memories",
        "chatgpt memory",
        "chatgpt memories",
        "chatgpt saved memories",
        "chatgpt's memories",
        "chatgpt’s memories",
        "saved memories (chatgpt)",
        "memories (chatgpt)",
    }
)


def _split_lines(text: str) -> list[_Line]:
    """Lines split at CR LF, CR or LF only (not at other Unicode separators, which stay inside a line)."""
    lines: list[_Line] = []
    pos = 1 if text.startswith(_BOM) else 0
    number = 1
    for match in _BREAK.finditer(text, pos):
        lines.append(_Line(number, pos, text[pos : match.start()]))
        pos = match.end()
        number += 1
    if pos < len(text):
        lines.append(_Line(number, pos, text[pos:]))
    return lines


def _indent_width(body: str) -> int:
    width = 0
    for char in body:
        if char == " ":
            width += 1
        elif char == "\t":
            width += 4 - width % 4
        else:
            break
    return width


def _is_chatgpt_header(body: str) -> bool:
    text = body.strip().lstrip("#").strip().strip("*_").strip()
    # "(?<!\s)": tried where blanks start, so a long run of blanks is not rescanned from each of its offsets.
    text = re.sub(r"(?<!\s)\s*\(\d+\)$", "", text).rstrip(":：").strip().lower()
    return text in _CHATGPT_HEADERS


def _heading_tag(text: str) -> str:
    return text.strip().strip("*_`").strip().rstrip(":：").strip()


def _date_prefix(text: str) -> tuple[int, datetime | None] | None:
    """For ``[date] - memory``: (length of the prefix, date or None for "unknown"); None if not such a prefix."""
    match = _DATE_PREFIX.match(text)
    if match is None:
        return None
    label = match.group(1).strip()
    if label.lower() in _UNKNOWN_DATES:
        return match.end(), None
    when = _parse_datetime_text(label)
    if when is None:
        return None
    return match.end(), when


@dataclass(slots=True)
class _Fences:
    """Per line index: 'open', 'close', 'inside' or None; plus the blocks as (first index, last index, closed)."""

    roles: list[str | None]
    blocks: list[tuple[int, int, bool]] = field(default_factory=list)


def _scan_fences(lines: Sequence[_Line], first: int = 0) -> _Fences:
    roles: list[str | None] = [None] * len(lines)
    blocks: list[tuple[int, int, bool]] = []
    opened: tuple[int, str, int] | None = None  # (index, char, length)
    for index in range(first, len(lines)):
        body = lines[index].body
        if opened is None:
            match = _FENCE_OPEN.match(body)
            if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                opened = (index, match.group(1)[0], len(match.group(1)))
                roles[index] = "open"
            continue
        match = _FENCE_CLOSE.match(body)
        if match and match.group(1)[0] == opened[1] and len(match.group(1)) >= opened[2]:
            roles[index] = "close"
            blocks.append((opened[0], index, True))
            opened = None
        else:
            roles[index] = "inside"
    if opened is not None:
        blocks.append((opened[0], len(lines) - 1, False))
    return _Fences(roles, blocks)


def _front_matter_end(lines: Sequence[_Line]) -> int | None:
    """Index of the closing line of a leading YAML front-matter block, if there is one."""
    if not lines or lines[0].number != 1 or lines[0].body.rstrip() != "---":
        return None
    for index in range(1, len(lines)):
        if lines[index].body.rstrip() in ("---", "..."):
            return index if index > 1 else None
    return None


@dataclass(slots=True)
class _Pending:
    first_line: int
    last_line: int
    start: int
    end: int
    listed: bool  # a bullet / numbered item (can take continuation lines)
    quoted: bool  # inside a ">" block quote (cannot be a setext heading's text)
    tags: list[str]


def _line_items(text: str, fmt: Literal["chatgpt", "markdown", "text"], warnings: _Warnings) -> list[ImportItem]:
    lines = _split_lines(text)
    if fmt == "text":
        return _plain_items(text, lines)
    return _MarkdownReader(text, lines, chatgpt=fmt == "chatgpt", warnings=warnings).read()


def _span_item(text: str, start: int, end: int, ref: str, **fields: Any) -> ImportItem:
    extra = {"span": [start, end], **fields.pop("extra", {})}
    return ImportItem(text=text[start:end], source_ref=ref, extra=extra, **fields)


def _plain_items(text: str, lines: Sequence[_Line]) -> list[ImportItem]:
    items: list[ImportItem] = []
    for line in lines:
        body = line.body
        if not body.strip():
            continue
        start = line.start + len(body) - len(body.lstrip())
        end = line.start + len(body.rstrip())
        items.append(_span_item(text, start, end, f"line {line.number}"))
    return items


class _MarkdownReader:
    """Line-by-line reader shared by the ``markdown`` and ``chatgpt`` formats (see the module docstring)."""

    def __init__(self, text: str, lines: list[_Line], *, chatgpt: bool, warnings: _Warnings) -> None:
        self.text = text
        self.lines = lines
        self.chatgpt = chatgpt
        self.warnings = warnings
        self.items: list[ImportItem] = []
        self.headings: list[tuple[int, str]] = []
        self.pending: _Pending | None = None

    # -- driver ------------------------------------------------------------------------------------------------

    def read(self) -> list[ImportItem]:
        first = 0
        if not self.chatgpt and (end := _front_matter_end(self.lines)) is not None:
            self.warnings.add(f"lines 1-{self.lines[end].number}: skipped YAML front matter")
            first = end + 1
        fences = _scan_fences(self.lines, first)
        fenced_content = any(self.lines[i].body.strip() for i, role in enumerate(fences.roles) if role == "inside")
        only_fenced = self.chatgpt and fenced_content
        if only_fenced:
            self._warn_outside(fences, first)
        for opened, last, closed in fences.blocks:
            if not closed:
                self.warnings.add(f"line {self.lines[opened].number}: code fence is never closed")
            if not self.chatgpt:
                inner = last - opened - 1 if closed else last - opened
                self.warnings.add(
                    f"lines {self.lines[opened].number}-{self.lines[last].number}: "
                    f"skipped a fenced code block ({inner} line(s))"
                )
        for index in range(first, len(self.lines)):
            role = fences.roles[index]
            if role in ("open", "close"):
                self._close()
                continue
            if role == "inside" and not self.chatgpt:
                continue
            if only_fenced and role is None:
                continue
            self._line(self.lines[index])
        self._close()
        return self.items

    def _warn_outside(self, fences: _Fences, first: int) -> None:
        outside = [
            line.number
            for index, line in enumerate(self.lines[first:], start=first)
            if fences.roles[index] is None and line.body.strip() and not _is_chatgpt_header(line.body)
        ]
        if outside:
            shown = ", ".join(str(n) for n in outside[:5]) + (", …" if len(outside) > 5 else "")
            self.warnings.add(
                f"ignored {len(outside)} line(s) outside the code block(s) (line {shown}): "
                "a ChatGPT answer's memories are taken from its code block"
            )

    # -- one line ----------------------------------------------------------------------------------------------

    def _line(self, line: _Line) -> None:
        body = line.body
        if not body.strip():
            self._close()
            return
        if self.chatgpt and _is_chatgpt_header(body):
            self._close()
            self.headings.clear()
            return
        setext = _SETEXT.match(body)
        pending = self.pending
        if (
            setext
            and pending is not None
            and not pending.listed
            and not pending.quoted
            and pending.first_line == pending.last_line == line.number - 1
        ):
            self.pending = None
            self._heading(1 if setext.group(1)[0] == "=" else 2, self.text[pending.start : pending.end])
            return
        if _HRULE.match(body):
            self._close()
            return
        heading = _ATX.match(body)
        if heading:
            self._close()
            self._heading(len(heading.group(1)), heading.group(2) or "")
            return
        if _EMPTY_MARKER.match(body):
            self._close()
            self.warnings.add(f"line {line.number}: empty list item skipped")
            return
        offset = 0
        while quote := _QUOTE.match(body, offset):
            offset = quote.end()
        marker = _BULLET.match(body, offset) or _NUMBERED.match(body, offset)
        if marker is None and pending is not None and pending.listed and offset == 0 and _indent_width(body) > 0:
            pending.end = line.start + len(body.rstrip())
            pending.last_line = line.number
            return
        self._close()
        content = marker.end() if marker else offset
        rest = body[content:]
        start = line.start + content + len(rest) - len(rest.lstrip())
        end = line.start + len(body.rstrip())
        if start >= end:  # a bare quote marker
            return
        tags = [tag for _, tag in self.headings]
        self.pending = _Pending(line.number, line.number, start, end, marker is not None, offset > 0, tags)

    def _heading(self, level: int, raw: str) -> None:
        while self.headings and self.headings[-1][0] >= level:
            self.headings.pop()
        if self.chatgpt and _is_chatgpt_header(raw):
            return
        tag = _heading_tag(raw)
        if tag:
            self.headings.append((level, tag))

    def _close(self) -> None:
        pending, self.pending = self.pending, None
        if pending is None:
            return
        ref = (
            f"line {pending.first_line}"
            if pending.first_line == pending.last_line
            else f"lines {pending.first_line}-{pending.last_line}"
        )
        start, created_at, extra = pending.start, None, {}
        if self.chatgpt:
            prefix = _date_prefix(self.text[start : pending.end])
            if prefix is not None:
                length, created_at = prefix
                extra["date_prefix"] = self.text[start : start + length].rstrip(" \t-–—:")
                start += length
        body = self.text[start : pending.end]
        if not body.strip():
            self.warnings.add(f"{ref}: empty item skipped")
            return
        spans = struck_spans(body)
        self.items.append(
            _span_item(
                self.text,
                start,
                pending.end,
                ref,
                created_at=created_at,
                tags=pending.tags,
                extra=extra,
                struck_spans=spans,
                struck_out=is_struck_out(body, spans),
            )
        )


def _detect_plain(text: str) -> Literal["chatgpt", "markdown", "text"]:
    lines = _split_lines(text)
    fences = _scan_fences(lines)
    content = [
        (line, fences.roles[i])
        for i, line in enumerate(lines)
        if line.body.strip() and fences.roles[i] not in ("open", "close")
    ]
    if not content:
        return "text"
    if _is_chatgpt_header(content[0][0].body):
        return "chatgpt"
    dated = 0
    for line, _role in content:
        body = line.body.strip()
        marker = _BULLET.match(body) or _NUMBERED.match(body)
        if _date_prefix(body[marker.end() :] if marker else body) is not None:
            dated += 1
    if dated * 2 >= len(content):
        return "chatgpt"
    markdownish = any(
        _ATX.match(line.body)
        or _BULLET.match(line.body)
        or _NUMBERED.match(line.body)
        or _QUOTE.match(line.body)
        or struck_spans(line.body)
        for line, role in content
        if role is None
    )
    inside = sum(1 for _, role in content if role == "inside")
    outside = len(content) - inside
    if inside > outside and outside <= 3 and not any(_ATX.match(line.body) for line, _ in content):
        return "chatgpt"  # one code block with a short intro/outro: a ChatGPT answer to an export prompt
    if markdownish:
        return "markdown"
    previous = ""
    for line, role in content:
        if role is None and _SETEXT.match(line.body) and previous.strip() and not _HRULE.match(previous):
            return "markdown"
        previous = line.body
    return "text"


# --------------------------------------------------------------------------------------------------------------
# JSON formats: mem0, chatgpt (JSON variant)


@dataclass(slots=True)
class _JsonDoc:
    entries: list[Any] | None  # the memory list, or None when the document has no recognisable one
    refs: list[str]
    shape: str  # for error messages


_JSON_START = re.compile(r"[\[{]\s*(?:[\"{\[\]}]|$)")


def _json_shape(doc: Any) -> str:
    if isinstance(doc, dict):
        keys = ", ".join(repr(k) for k in list(doc)[:6]) + (", …" if len(doc) > 6 else "")
        return f"an object with keys {keys}" if doc else "an empty object"
    if isinstance(doc, list):
        return "a list"
    return f"a JSON {type(doc).__name__}"


def _json_container(doc: Any) -> tuple[list[Any], str] | None:
    if isinstance(doc, list):
        return doc, "$"
    if isinstance(doc, dict):
        for key in ("results", "memories"):
            if isinstance(doc.get(key), list):
                return doc[key], f"$.{key}"
        if isinstance(doc.get("memory"), str):
            return [doc], ""
    return None


def _try_json(text: str, display: str, *, required: bool) -> _JsonDoc | None:
    body = text[1:] if text.startswith(_BOM) else text
    stripped = body.strip()
    if not stripped or stripped[0] not in "[{":
        if required:
            what = "is empty" if not stripped else "is not JSON (it does not start with '[' or '{')"
            raise ImportFormatError(display, what)
        return None
    try:
        doc = json.loads(body)
    except json.JSONDecodeError as exc:
        if stripped[0] == "{":
            lines = _try_json_lines(text)
            if lines is not None:
                return lines
        if required or _JSON_START.match(stripped):
            raise ImportFormatError(
                display, f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            ) from None
        return None
    except RecursionError:
        raise ImportFormatError(display, "is not usable JSON: nested too deeply") from None
    found = _json_container(doc)
    if found is None:
        return _JsonDoc(None, [], _json_shape(doc))
    entries, base = found
    refs = ["$"] if base == "" else [f"{base}[{i}]" for i in range(len(entries))]
    return _JsonDoc(entries, refs, _json_shape(doc))


def _try_json_lines(text: str) -> _JsonDoc | None:
    entries: list[Any] = []
    refs: list[str] = []
    for line in _split_lines(text):
        if not line.body.strip():
            continue
        try:
            entry = json.loads(line.body)
        except (json.JSONDecodeError, RecursionError):
            return None
        if not isinstance(entry, dict):
            return None
        entries.append(entry)
        refs.append(f"line {line.number}")
    return _JsonDoc(entries, refs, "JSON Lines") if entries else None


def _json_format(doc: _JsonDoc, display: str) -> Literal["mem0", "chatgpt"]:
    if doc.entries is None:
        raise ImportFormatError(
            display,
            f"JSON has the wrong shape: {doc.shape}; expected a list of memories, or an object with a "
            "'results' or 'memories' list",
        )
    if any(isinstance(e, dict) and "memory" in e for e in doc.entries):
        return "mem0"
    if any(isinstance(e, str) or (isinstance(e, dict) and ("content" in e or "text" in e)) for e in doc.entries):
        return "chatgpt"
    if not doc.entries:
        raise ImportFormatError(display, "no memory items found (the JSON memory list is empty)")
    raise ImportFormatError(
        display,
        "JSON has the wrong shape: its entries have no 'memory' (Mem0) or 'content'/'text' (ChatGPT) field",
    )


_TEXT_KEYS: Final = {"mem0": ("memory", "text", "content"), "chatgpt": ("content", "text", "memory", "value")}
_CREATED_KEYS: Final = ("created_at", "createdAt", "create_time", "created", "timestamp")
_KIND_KEYS: Final = ("type", "kind", "category")


def _jsonable(value: Any) -> Any:
    """JSON-safe copy: non-finite floats and bytes become strings (json.loads accepts NaN; SQLite has BLOBs)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _str_list(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _first_str(mapping: Any, keys: Iterable[str]) -> str | None:
    if not isinstance(mapping, dict):
        return None
    for key in keys:
        value = mapping.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _json_items(doc: _JsonDoc, fmt: Literal["mem0", "chatgpt"], warnings: _Warnings) -> list[ImportItem]:
    assert doc.entries is not None  # checked by _json_format / the callers
    items: list[ImportItem] = []
    for entry, ref in zip(doc.entries, doc.refs, strict=True):
        if isinstance(entry, str):
            if not _is_utf8_safe(entry):
                warnings.add(f"{ref}: contains an unpaired surrogate escape (not valid Unicode) — skipped")
            elif entry.strip():
                items.append(ImportItem(text=entry, source_ref=ref))
            else:
                warnings.add(f"{ref}: empty memory skipped")
            continue
        if not isinstance(entry, dict):
            warnings.add(f"{ref}: expected a memory object, got {_json_shape(entry)} — skipped")
            continue
        if not _is_utf8_safe(json.dumps(entry, ensure_ascii=False)):
            warnings.add(f"{ref}: contains an unpaired surrogate escape (not valid Unicode) — skipped")
            continue
        key = next((k for k in _TEXT_KEYS[fmt] if k in entry), None)
        if key is None:
            wanted = "'memory'" if fmt == "mem0" else "'content' or 'text'"
            warnings.add(f"{ref}: no {wanted} field — skipped")
            continue
        text = entry[key]
        if not isinstance(text, str):
            warnings.add(f"{ref}: '{key}' is {_json_shape(text)}, not a string — skipped")
            continue
        if not text.strip():
            warnings.add(f"{ref}: empty '{key}' — skipped")
            continue
        try:
            items.append(_json_item(entry, key, text, ref, warnings))
        except (RecursionError, ValidationError) as exc:  # e.g. metadata nested absurdly deep
            reason = "nested too deeply" if isinstance(exc, RecursionError) else exc.errors()[0]["msg"]
            warnings.add(f"{ref}: cannot be imported ({reason}) — skipped")
    return items


def _json_item(entry: dict[str, Any], key: str, text: str, ref: str, warnings: _Warnings) -> ImportItem:
    consumed = {key}
    raw_id = entry.get("id")
    external_id = str(raw_id) if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) else None
    if external_id is not None:
        consumed.add("id")
    created_at = None
    created_key = next((k for k in _CREATED_KEYS if entry.get(k) not in (None, "")), None)
    if created_key is not None:
        created_at = _parse_timestamp(entry[created_key])
        if created_at is None:
            warnings.add(f"{ref}: unrecognised {created_key} {entry[created_key]!r} — kept in extra")
        else:
            consumed.add(created_key)
    tags: list[str] = []
    for tag_key in ("categories", "tags"):
        if entry.get(tag_key) is None:
            continue
        values = _str_list(entry[tag_key])
        if values is None:
            warnings.add(f"{ref}: '{tag_key}' is not a list of strings — kept in extra")
        else:
            tags.extend(values)
            consumed.add(tag_key)
    categories = _str_list(entry.get("categories")) or []
    kind = _first_str(entry, _KIND_KEYS) or _first_str(entry.get("metadata"), _KIND_KEYS)
    if kind is None and categories:
        kind = categories[0]
    status = _first_str(entry, ("status", "state"))
    if status is None and entry.get("enabled") is False:
        status = "disabled"
    extra = {k: _jsonable(v) for k, v in entry.items() if k not in consumed}
    return ImportItem(
        text=text,
        source_ref=ref,
        created_at=created_at,
        kind=kind,
        tags=tags,
        external_id=external_id,
        status=status,
        extra=extra,
    )


# --------------------------------------------------------------------------------------------------------------
# dsh-memory-connect SQLite store


class _DshStore:
    """A read-only connection to a verified dsh-memory-connect store (a context manager that closes it)."""

    def __init__(self, conn: sqlite3.Connection, columns: list[str], application_id: int, user_version: int) -> None:
        self.conn = conn
        self.columns = columns
        self.application_id = application_id
        self.user_version = user_version

    def __enter__(self) -> _DshStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


def _sqlite_text(raw: bytes) -> str | bytes:
    """TEXT values as str; invalid UTF-8 stays bytes (reported per row) instead of failing the whole query."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _connect_ro(file: Path, immutable: bool) -> sqlite3.Connection:
    uri = file.resolve().as_uri() + ("?mode=ro&immutable=1" if immutable else "?mode=ro")
    conn = sqlite3.connect(uri, uri=True, timeout=5.0)
    conn.text_factory = _sqlite_text
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def _open_dsh_store(file: Path, display: str, warnings: _Warnings) -> _DshStore:
    try:
        conn = _connect_ro(file, immutable=False)
    except sqlite3.Error as first:
        try:
            conn = _connect_ro(file, immutable=True)
        except sqlite3.Error:
            raise ImportFormatError(display, f"unreadable SQLite database: {first}") from None
        warnings.add(
            f"a normal read-only open failed ({first}); opened with immutable=1, so changes still in a -wal file "
            "may be missing"
        )
    try:
        found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memories'").fetchone()
        if found is None:
            raise ImportFormatError(display, "SQLite database has no 'memories' table; not a dsh-memory-connect store")
        columns = [row[1] for row in conn.execute("PRAGMA table_info(memories)")]
        missing = [c for c in DSH_MEMORY_REQUIRED if c not in columns]
        if missing:
            raise ImportFormatError(
                display,
                f"the 'memories' table lacks column(s) {', '.join(missing)}; not a dsh-memory-connect store",
            )
        application_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        user_version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.Error as exc:
        conn.close()
        raise ImportFormatError(display, f"unreadable SQLite database: {exc}") from None
    except BaseException:
        conn.close()
        raise
    return _DshStore(conn, columns, application_id, user_version)


def _parse_dsh_store(file: Path, display: str) -> ImportBatch:
    warnings = _Warnings()
    with _open_dsh_store(file, display, warnings) as store:
        if store.application_id != DSH_MEMORY_APPLICATION_ID:
            warnings.add(
                f"application_id is 0x{store.application_id:08X}, not 0x{DSH_MEMORY_APPLICATION_ID:08X} ('MEM0'); "
                "read anyway because the memories table matches"
            )
        if store.user_version != DSH_MEMORY_USER_VERSION:
            warnings.add(f"schema user_version is {store.user_version}, not {DSH_MEMORY_USER_VERSION}; read anyway")
        absent = [c for c in DSH_MEMORY_COLUMNS if c not in store.columns]
        if absent:
            warnings.add(f"the 'memories' table has no column(s) {', '.join(absent)}; those fields are left empty")
        selected = [c for c in DSH_MEMORY_COLUMNS if c in store.columns]
        query = f"SELECT {', '.join(selected)} FROM memories ORDER BY created_at, id"  # names from a fixed list
        try:
            rows = [dict(zip(selected, row, strict=True)) for row in store.conn.execute(query)]
        except sqlite3.Error as exc:
            raise ImportFormatError(display, f"unreadable SQLite database: {exc}") from None
    items = [item for row in rows if (item := _dsh_item(row, warnings)) is not None]
    dump = {
        "source": "dsh-memory-connect",
        "table": "memories",
        "application_id": store.application_id,
        "user_version": store.user_version,
        "columns": selected,
        "rows": [_jsonable(row) for row in rows],
    }
    source = json.dumps(dump, ensure_ascii=False, sort_keys=True, indent=1, allow_nan=False)
    if not items:
        raise _no_items(display, "dsh-memory-connect", warnings)
    return _batch("dsh-memory-connect", file.name or display, source, items, warnings)


def _dsh_item(row: dict[str, Any], warnings: _Warnings) -> ImportItem | None:
    ref = f"memories row id={row['id']}"
    content = row["content"]
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8")
        except UnicodeDecodeError:
            warnings.add(f"{ref}: content is a BLOB that is not UTF-8 — skipped")
            return None
    if not isinstance(content, str):
        warnings.add(f"{ref}: content is {type(content).__name__}, not text — skipped")
        return None
    if not content.strip():
        warnings.add(f"{ref}: empty content — skipped")
        return None
    extra: dict[str, Any] = {}
    created_at = _parse_timestamp(row["created_at"], unit="ms")
    if created_at is None:
        warnings.add(f"{ref}: unrecognised created_at {row['created_at']!r} — kept in extra")
        extra["created_at"] = row["created_at"]
    tags: list[str] = []
    raw_tags = row.get("tags")
    if raw_tags not in (None, ""):
        try:
            parsed = json.loads(raw_tags) if isinstance(raw_tags, str | bytes) else raw_tags
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            parsed = None
        values = _str_list(parsed) if isinstance(parsed, list) else None
        if values is None:
            warnings.add(f"{ref}: tags {raw_tags!r} is not a JSON list of strings — kept in extra as tags_raw")
            extra["tags_raw"] = raw_tags
        else:
            tags = values
    kind = row.get("type") if isinstance(row.get("type"), str) else None
    if kind is not None and kind not in DSH_MEMORY_TYPES:
        warnings.add(f"{ref}: unknown type {kind!r} (kept)")
    status = row.get("status") if isinstance(row.get("status"), str) else None
    if status is not None and status not in DSH_MEMORY_STATUSES:
        warnings.add(f"{ref}: unknown status {status!r} (kept)")
    for column in DSH_MEMORY_COLUMNS:
        if column in row and column not in ("id", "type", "content", "created_at", "tags", "status"):
            extra[column] = row[column]
    return ImportItem(
        text=content,
        source_ref=ref,
        created_at=created_at,
        kind=kind,
        tags=tags,
        external_id=str(row["id"]),
        status=status,
        extra=_jsonable(extra),
    )
