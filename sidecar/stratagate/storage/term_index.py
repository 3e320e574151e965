"""A derived top-k index of search terms (tantivy), kept in a directory next to the database.

SQLite is the truth: its FTS tables hold the terms ``text.terms`` produced, and this index holds the same terms,
whitespace-separated, so its BM25 ranks the same vocabulary. Tantivy ranks with block-max WAND: the top k of a query
cost what the few best postings blocks cost, where FTS5's ``bm25()`` scores every matching row.

Crash safety: a tantivy commit is atomic (its ``meta.json`` is replaced in one rename), and the watermark (the last
change-feed ``seq`` the index holds) is written to ``watermark.json`` only after the commit, atomically too. After a
kill -9 the watermark is therefore never ahead of the index; changes past it are applied again, which is idempotent
(a document is deleted by id before it is added). A rebuild (``Builder``) is written to a fresh directory and renamed
into place.

Several processes may share one database (DSH's sidecar, an MCP server): every write takes ``lock`` (flock, released
by the kernel when a process dies); a process that cannot take it keeps reading the last commit. Readers notice
another process's commit (the watermark file changed) or rebuild (the directory changed) and reload.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = 1
"""Bumped when the schema or the meaning of the terms changes: an index of another format is rebuilt."""
HEAP = 15_000_000  # tantivy's minimum per writer thread is 3 MB; an index of events needs little
TIES = 4096
"""Hits read at most to keep ties at the cut newest first: past that (thousands of near-identical events tie), the
tie is broken in tantivy's document order."""
K1, B = 1.2, 0.75  # tantivy's BM25 constants (FTS5 uses the same)


def available() -> bool:
    try:
        import tantivy  # noqa: F401
    except ImportError:
        return False
    return True


def root(db_file: Path) -> Path:
    """The directory of a database's derived indexes (created owner-only: it holds the same words)."""
    path = db_file.with_name(db_file.name + "-search")
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def path_of(db_file: Path) -> Path:
    """The directory of a database's derived indexes, not created (``root`` creates it)."""
    return db_file.with_name(db_file.name + "-search")


def committed_mark(path: Path) -> Mark | None:
    """The watermark of the index committed at ``path`` (None: none, or of another format)."""
    return _read_mark(path)


def discard(db_file: Path) -> None:
    """Remove a database's derived indexes (after an erase, a redaction or a purge: their segments may still hold
    the removed terms); the next query rebuilds them from SQLite. Waits for a writer of another process to finish."""
    path = db_file.with_name(db_file.name + "-search")
    if not path.is_dir():
        return
    fd = os.open(path / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        for child in path.iterdir():
            if child.name != "lock":
                shutil.rmtree(child, ignore_errors=True)
    finally:
        os.close(fd)


def _schema() -> Any:
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("id", indexed=True, fast=True)
    sb.add_text_field("terms", tokenizer_name="whitespace", index_option="freq")
    return sb.build()


@dataclass(frozen=True)
class Mark:
    """What ``watermark.json`` records: the last change-feed row the index holds (its seq and item id, which a
    replaced database would not have) and the totals BM25 needs for documents not yet committed."""

    seq: int
    item: int
    docs: int
    tokens: int

    def dump(self) -> str:
        return json.dumps({"format": FORMAT, "seq": self.seq, "item": self.item, "docs": self.docs,
                           "tokens": self.tokens})


def _read_mark(path: Path) -> Mark | None:
    try:
        raw = json.loads((path / "watermark.json").read_text())
        if raw.get("format") != FORMAT:
            return None
        return Mark(int(raw["seq"]), int(raw["item"]), int(raw["docs"]), int(raw["tokens"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_mark(path: Path, mark: Mark) -> None:
    tmp = path / f"watermark.json.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(mark.dump())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path / "watermark.json")


@contextlib.contextmanager
def write_lock(root: Path) -> Iterator[bool]:
    """The index directory's write lock, without waiting: yields False when another process holds it."""
    fd = os.open(root / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class TermIndex:
    """One index directory (``root/name``): documents (id, terms) and the watermark of what they reflect."""

    def __init__(self, path: Path, index: Any, mark: Mark):
        self.path = path
        self.mark = mark
        self._index = index
        self._schema = index.schema
        self._stamp = _stamp(path)

    @classmethod
    def open(cls, path: Path) -> TermIndex | None:
        """The committed index at ``path``, or None when it is missing, of another format or unreadable."""
        import tantivy

        mark = _read_mark(path)
        if mark is None:
            return None
        try:
            index = _quiet(tantivy.Index.open(str(path)))
            index.searcher()
        except (OSError, ValueError):
            return None
        return cls(path, index, mark)

    def add(self, docs: list[tuple[int, str]], mark: Mark) -> None:
        """Commit documents (the caller holds the write lock): an id already present is replaced, and removed when
        its terms are empty."""
        import tantivy

        writer = self._index.writer(heap_size=HEAP, num_threads=1)
        tokens = 0
        for item_id, terms in docs:
            writer.delete_documents_by_term("id", item_id)
            if terms:
                writer.add_document(tantivy.Document(id=item_id, terms=terms))
                tokens += terms.count(" ") + 1
        writer.commit()
        writer.wait_merging_threads()  # drops the writer: tantivy's own lock is released with it
        self.mark = Mark(mark.seq, mark.item, self.mark.docs + len(docs), self.mark.tokens + tokens)
        _write_mark(self.path, self.mark)
        self._index.reload()
        self._stamp = _stamp(self.path)

    def stale(self) -> bool:
        """Whether another process committed or rebuilt since this handle last looked."""
        return _stamp(self.path) != self._stamp

    def top(self, terms: list[str], limit: int) -> list[tuple[int, float]]:
        """The ``limit`` best (id, BM25) documents holding any of ``terms``, best first."""
        import tantivy

        should = tantivy.Occur.Should
        query = tantivy.Query.boolean_query(
            [(should, tantivy.Query.term_query(self._schema, "terms", t, "freq")) for t in terms]
        )
        searcher = self._index.searcher()
        want = limit + 1  # one more: a lower score past the cut shows that no tie with the last one kept is left out
        while True:  # widened while documents tied with the last one kept may be left out
            hits = searcher.search(query, want, count=False).hits
            if limit <= 0 or len(hits) < want or hits[-1][0] < hits[limit - 1][0] or want >= TIES:
                break
            want = min(want * 2, max(TIES, limit))  # (a tie group at the cut is mostly a few dozen)
        ids = searcher.fast_field_values("id", [address for _, address in hits])
        # (score, id) pairs sorted descending: ties go to the newest document, as FTS5's "ORDER BY rank, rowid DESC".
        found = sorted(zip([score for score, _ in hits], ids, strict=True), reverse=True)[:limit]
        return [(int(i), float(score)) for score, i in found]

    def stats(self, terms: list[str]) -> tuple[int, dict[str, int]]:
        """(documents, document frequency of each term) as the committed index counts them."""
        searcher = self._index.searcher()
        return searcher.num_docs, {t: searcher.doc_freq("terms", t) for t in terms}


class Builder:
    """A new index written in slices (``add`` as the rows are read: one slice in memory at a time), then swapped in
    place of any old one by ``finish``; the caller holds the write lock throughout."""

    def __init__(self, path: Path):
        import tantivy

        self.path = path
        self._fresh = path.with_name(f"{path.name}.new{os.getpid()}")
        shutil.rmtree(self._fresh, ignore_errors=True)
        self._fresh.mkdir(mode=0o700, parents=True)
        fresh = _quiet(tantivy.Index(_schema(), path=str(self._fresh), reuse=False))
        self._writer = fresh.writer(heap_size=HEAP, num_threads=1)
        self._count = self._tokens = 0

    def add(self, docs: Iterable[tuple[int, str]]) -> None:
        import tantivy

        for item_id, terms in docs:
            if terms:
                self._writer.add_document(tantivy.Document(id=item_id, terms=terms))
                self._count += 1
                self._tokens += terms.count(" ") + 1

    def finish(self, mark: Mark) -> TermIndex:
        import tantivy

        self._writer.commit()
        self._writer.wait_merging_threads()
        mark = Mark(mark.seq, mark.item, self._count, self._tokens)
        _write_mark(self._fresh, mark)
        old = self.path.with_name(f"{self.path.name}.old{os.getpid()}")
        if self.path.exists():
            os.replace(self.path, old)
        os.replace(self._fresh, self.path)
        shutil.rmtree(old, ignore_errors=True)
        return TermIndex(self.path, _quiet(tantivy.Index.open(str(self.path))), mark)


def _quiet(index: Any) -> Any:
    """``index`` with a reader reloaded only when asked (``TermIndex.add``; another process's commit is seen by
    ``stale`` and reopened). Tantivy's default reader polls meta.json from a thread of its own and reloads on a
    change, taking its meta lock: that recreates a lock file in a directory being removed (a discard, a rebuild's
    swap) and costs a wake-up every 500 ms per open handle."""
    index.config_reader(reload_policy="Manual")
    return index


def _stamp(path: Path) -> tuple[int, int]:
    """(directory inode, watermark file mtime): changes on any commit or rebuild, by any process."""
    try:
        return os.stat(path).st_ino, os.stat(path / "watermark.json").st_mtime_ns
    except OSError:
        return 0, 0


def bm25(tf: int, length: int, docs: int, df: int, avg_length: float) -> float:
    """Tantivy's BM25 of one term in one document (for documents scored before they are committed)."""
    idf = math.log(1 + (docs - df + 0.5) / (df + 0.5))
    return idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / max(avg_length, 1.0)))
