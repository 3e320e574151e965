"""Dates written in text, normalised to search tokens, and the time window a query names.

Every spelling of one day gives the same tokens, so "May 2023" matches "2023-05-08", "8 May 2023",
"May 8th, 2023" and "2023年5月8日":

- a year: ``y2023``
- a month: ``y2023 m202305``
- a day: ``y2023 m202305 d20230508``

Tokens are plain letters and digits so SQLite's unicode61 tokenizer keeps each one whole. Dates without a
year ("8 May") and numeric forms that are ambiguous between countries (05/08/2023) are left as words.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime

_MONTHS = {
    name: i
    for i in range(1, 13)
    for name in {calendar.month_name[i].lower(), calendar.month_abbr[i].lower()}
}
_MONTHS["sept"] = 9
_MONTH = r"(?P<mn{i}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<d{i}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<y{i}>(?:19|20)\d\d)"
_SEP = r"[ \t]*,?[ \t]*"
_OF = r"[ \t]+(?:of[ \t]+)?"

# Most precise first: at each position the first alternative that matches wins, and a more precise mention never
# starts later than a less precise one it overlaps ("May 8, 2023" is tried before "May 2023").
_PATTERNS = [
    # 2023-05-08, 2023/05/08, 2023.05.08 (a time may follow)
    r"(?<![\w.-])" + _YEAR + r"(?P<s{i}>[-/.])(?P<m{i}>[01]?\d)(?P=s{i})(?P<d{i}>[0-3]?\d)(?!\d)",
    # 2023年5月8日, 2023年5月
    _YEAR + r"\s*年\s*(?P<m{i}>[01]?\d)\s*月(?:\s*(?P<d{i}>[0-3]?\d)\s*[日号])?",
    # 8 May 2023, 8th of May, 2023
    r"(?<!\w)" + _DAY + _OF + _MONTH + _SEP + _YEAR + r"(?!\w)",
    # May 8, 2023 / May 8th 2023
    r"(?<!\w)" + _MONTH + r"[ \t]+" + _DAY + _SEP + _YEAR + r"(?!\w)",
    # May 2023, May, 2023, May of 2023
    r"(?<!\w)" + _MONTH + r"(?:" + _SEP + "|" + _OF + r")" + _YEAR + r"(?!\w)",
    # 2023-05 (ISO year-month, not a range like 2023-2024)
    r"(?<![\w.-])" + _YEAR + r"-(?P<m{i}>0[1-9]|1[0-2])(?![\w-])",
    # a bare year (also each end of "2023-2024")
    r"(?<![\w.,])" + _YEAR + r"(?!\w|[.,]\d)",
]
_DATE = re.compile("|".join(p.replace("{i}", str(i)) for i, p in enumerate(_PATTERNS)), re.IGNORECASE)
_YEARISH = re.compile(r"(?:19|20)\d\d")  # no year, no date: skip the big pattern


@dataclass(frozen=True)
class DateSpan:
    """One date mention: where it is in the text, and its precision ('year', 'month' or 'day')."""

    start: int
    end: int
    year: int
    month: int | None = None
    day: int | None = None

    @property
    def tokens(self) -> list[str]:
        out = [f"y{self.year:04d}"]
        if self.month is not None:
            out.append(f"m{self.year:04d}{self.month:02d}")
            if self.day is not None:
                out.append(f"d{self.year:04d}{self.month:02d}{self.day:02d}")
        return out

    def window(self) -> tuple[datetime, datetime]:
        """[start, end) of the period the mention names, in UTC."""
        if self.month is None:
            return datetime(self.year, 1, 1, tzinfo=UTC), datetime(self.year + 1, 1, 1, tzinfo=UTC)
        if self.day is None:
            nxt = (self.year + 1, 1) if self.month == 12 else (self.year, self.month + 1)
            return datetime(self.year, self.month, 1, tzinfo=UTC), datetime(*nxt, 1, tzinfo=UTC)
        start = datetime(self.year, self.month, self.day, tzinfo=UTC)
        return start, datetime.fromordinal(start.toordinal() + 1).replace(tzinfo=UTC)


def _span(m: re.Match[str]) -> DateSpan:
    i = next(k for k in range(len(_PATTERNS)) if m.group(f"y{k}") is not None)
    groups = {key[: -len(str(i))]: value for key, value in m.groupdict().items() if key.endswith(str(i))}
    year = int(groups["y"])
    month: int | None = None
    if groups.get("m"):
        month = int(groups["m"])
    elif groups.get("mn"):
        month = _MONTHS.get(groups["mn"].lower().rstrip("."))
    day = int(groups["d"]) if groups.get("d") else None
    if month is not None and not 1 <= month <= 12:
        month = day = None  # "2023-13-01": the year still counts
    if day is not None:
        try:
            date(year, month or 0, day)
        except ValueError:
            day = None  # "31 Feb 2023": the month still counts
    return DateSpan(m.start(), m.end(), year, month, day)


_BEFORE, _AFTER = 48, 16  # every mention has a year, starting at most this far before it and ending this soon after


def find_dates(text: str) -> list[DateSpan]:
    """Date mentions in ``text``, left to right, never overlapping.

    The full pattern runs only in windows around year-like numbers: it is ~50× slower than the year scan, and most
    text (code, tool output) has few years or none.
    """
    windows: list[list[int]] = []
    for year in _YEARISH.finditer(text):
        start, end = max(0, year.start() - _BEFORE), min(len(text), year.end() + _AFTER)
        if windows and start <= windows[-1][1]:
            windows[-1][1] = end
        else:
            windows.append([start, end])
    found: list[DateSpan] = []
    for start, end in windows:
        for m in _DATE.finditer(text, start, end):
            if not found or m.start() >= found[-1].end:
                found.append(_span(m))
    return found


def date_tokens(when: datetime | date) -> list[str]:
    """Tokens of one day (e.g. a message's own timestamp)."""
    return DateSpan(0, 0, when.year, when.month, when.day).tokens


_MONTH_ALONE = re.compile(
    r"(?<![\w])(?P<prep>(?:in|during|of|since|until|till|by|before|after|early|late|mid|last|next|this)[ \t]+)?"
    r"(?P<mn>January|February|March|April|May|June|July|August|September|October|November|December)(?![\w])"
)


def find_months(text: str) -> list[int]:
    """Months named without a year ("camping in June"): capitalised full names that do not start the text and are
    not part of a dated mention; "May" and "March" only after a preposition ("in May"), being also words."""
    spans = find_dates(text)
    out: list[int] = []
    for m in _MONTH_ALONE.finditer(text):
        if m.start("mn") == 0 or any(s.start <= m.start("mn") < s.end for s in spans):
            continue
        if m.group("mn") in ("May", "March") and not m.group("prep"):
            continue
        month = _MONTHS[m.group("mn").lower()]
        if month not in out:
            out.append(month)
    return out
