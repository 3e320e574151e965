"""Mention time vs occurrence time for event cards, and code-side resolution of time expressions.

*Mention time* is when something was said. It always comes from the source message's timestamp, filled in by code,
never by the model. *Occurrence time* is when the event happened or will happen. The model only reports the
verbatim wording of a time expression ("next week", "下周五"); :func:`resolve` turns that wording into a half-open
window ``[start, end)`` by reading it against the mention time, in the mention's own timezone. A plan is never
evidence that something happened (see :func:`status_for`).

Calendar rules used by :func:`resolve`:

- Windows are half-open ``[start, end)`` at the expression's precision, built from wall-clock midnights in the
  mention's timezone: ``mentioned_at.tzinfo``, or ``tz`` when given (the mention is first converted to ``tz``).
  day = midnight to the next midnight; week = ISO week, Monday 00:00 to the next Monday 00:00; month = the 1st
  to the 1st of the next month; year = 1 January to the next 1 January; quarter and weekend are ``"range"``.
- Relative offsets move whole calendar units. "in 2 weeks" is the ISO week two weeks after the current one,
  "in 2 months" is the calendar month two months on (so "next month" from 31 January is all of February), and
  "3 days ago" is the whole day three days back.
- Weekdays. A bare or "this" weekday ("Friday", "on Friday", "this Friday", "周五", "星期五", "礼拜五",
  "这周五", "本周五") is that day of the *current* ISO week, even when it is already past. "next Friday",
  "Friday next week" and "下周五" are Friday of *next* week. "Friday last week" and "上周五" are Friday of the
  previous week. English "last Friday" is the most recent Friday strictly before the mention day (on a Saturday
  that is yesterday). "every Friday"/"每周五" and plurals ("on Fridays") are recurrences and resolve to nothing.
- Named months. "in June" is the first June on or after the mention's month (this June while it is June);
  "next June" is the first June strictly after it; "last June" the most recent June strictly before it;
  "this June" is June of the mention's year. These are ``basis="relative"``. A bare month name ("June") is not
  resolved. A month and day without a year ("May 11", "11 May", "5月11日") take the mention's year and are
  ``basis="explicit"``; lowercase "may" followed only by a day is not a date ("you may 2 ...").
- Bare years are resolved only with "in"/"during"/"throughout" in front ("in 2027") or when the year is the
  whole expression ("2027"), so counts such as "deleted 2026 rows" are not years. Chinese "2026年" always is.
- ISO datetimes ("2026-05-11T09:30:00+08:00") are ``"instant"``: the window is one unit of the finest field
  written (a minute, a second or a microsecond). Without an offset the mention's timezone is assumed.
- Deadlines. "by March", "by the end of March", "before March", "mid-June" are that month (the first on or
  after the mention's month); "end of the week/month/year", "EOD"/"EOW"/"EOM" the current unit; "end of next
  month" is next month; "月底"/"月末" this month, "年底"/"年末" this year ("3月底", "下个月底" read the month
  named). "within two weeks" / "两周内" is the range from the mention day to that many units on.
- Vague wording ("soon", "later", "someday", "a few days ago", "一会儿", "过几天", "两三天后") resolves to
  precision ``"unknown"`` with no window and ``basis="unknown"``. Nothing is guessed.

First-match rule: of all resolvable expressions found in the text, the one that starts first wins; at equal
starts the longest wins (so "next week Friday" beats "next week", "May 11, 2026" beats "May 11",
"大后天" beats "后天"). Vague words never compete, so "soon, maybe next week" gives "next week". Ranges
("from Monday to Friday") are not combined: the first end point wins. Clock times attached to relative days
("tomorrow at 3pm") are not read: the result is the whole day.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from typing import Annotated, Literal, Self

from pydantic import AwareDatetime, BaseModel, ConfigDict, PlainSerializer, model_validator

__all__ = [
    "Basis",
    "Precision",
    "Resolution",
    "Temporal",
    "TimeStatus",
    "build_temporal",
    "resolve",
    "status_for",
]

Precision = Literal["instant", "day", "week", "month", "year", "range", "unknown"]
Basis = Literal["explicit", "relative", "inferred", "unknown"]
TimeStatus = Literal["planned", "occurred", "ongoing", "cancelled", "unknown"]

# Aware datetimes, serialised as ISO-8601 with an explicit numeric offset ("+08:00", "+00:00").
IsoDatetime = Annotated[AwareDatetime, PlainSerializer(lambda v: v.isoformat(), return_type=str, when_used="json")]


class Temporal(BaseModel):
    """The temporal record of an event card."""

    model_config = ConfigDict(extra="forbid")

    mentioned_at: IsoDatetime
    """When it was said: the source message's timestamp, always filled in by code."""
    happened_start: IsoDatetime | None = None
    """Start of the occurrence window (inclusive)."""
    happened_end: IsoDatetime | None = None
    """End of the occurrence window (exclusive)."""
    original: str | None = None
    """The time expression verbatim, as it was worded in the conversation."""
    precision: Precision = "unknown"
    basis: Basis = "unknown"
    status: TimeStatus = "unknown"

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        start, end = self.happened_start, self.happened_end
        if start is not None and end is not None and start > end:
            raise ValueError("happened_start must not be after happened_end")
        return self


class Resolution(BaseModel):
    """What :func:`resolve` found: a window ``[start, end)`` or, for unknown/vague wording, none."""

    model_config = ConfigDict(frozen=True)

    start: IsoDatetime | None = None
    end: IsoDatetime | None = None
    precision: Precision = "unknown"
    basis: Basis = "unknown"
    original: str | None = None
    """The matched wording, verbatim; for unresolved input, the stripped input (None when blank)."""
    span: tuple[int, int] | None = None
    """Character offsets of ``original`` in the resolved expression, when something matched."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if (self.start is None) != (self.end is None):
            raise ValueError("start and end are both set or both unset")
        if self.start is not None and self.end is not None and not self.start < self.end:
            raise ValueError("start must be before end")
        if (self.start is None) != (self.precision == "unknown"):
            raise ValueError("precision is 'unknown' exactly when there is no window")
        return self

    @property
    def resolved(self) -> bool:
        return self.start is not None


def resolve(expression: str | None, mentioned_at: datetime, *, tz: tzinfo | None = None) -> Resolution:
    """Resolve a time expression against the mention time (see the module docstring for the rules)."""
    if mentioned_at.tzinfo is None or mentioned_at.utcoffset() is None:
        raise ValueError("mentioned_at must be timezone-aware")
    text = expression or ""
    local = mentioned_at.astimezone(tz) if tz is not None else mentioned_at
    zone = local.tzinfo
    assert zone is not None
    ctx = _Ctx(today=local.date(), zone=zone)
    best: tuple[tuple[int, int, int], _Win, int, int] | None = None
    for order, (pattern, handler) in enumerate(_compiled_rules()):
        for m in pattern.finditer(text):
            try:
                win = handler(m, ctx)
            except (ValueError, OverflowError):  # impossible dates, or out of datetime's range
                win = None
            if win is None:
                continue
            s, e = m.span("x") if "x" in pattern.groupindex else m.span()
            key = (s, s - e, order)
            if best is None or key < best[0]:
                best = (key, win, s, e)
    if best is None:
        return Resolution(original=text.strip() or None)
    _, win, s, e = best
    return Resolution(
        start=win.start, end=win.end, precision=win.precision, basis=win.basis, original=text[s:e], span=(s, e)
    )


def status_for(resolution: Resolution, mentioned_at: datetime, stated_status: TimeStatus) -> TimeStatus:
    """The status to store, given the model's word and the resolved window.

    A window lying entirely after the mention (start > mentioned_at) cannot have happened yet, so "occurred" is
    downgraded to "planned". Everything else keeps the model's word: in particular a window entirely before the
    mention is never upgraded from "planned" to "occurred" (a plan is not evidence that something happened), and
    "ongoing"/"cancelled"/"unknown" are left alone. Comparisons are on datetimes, not strings.
    """
    if stated_status == "occurred" and resolution.start is not None and resolution.start > mentioned_at:
        return "planned"
    return stated_status


def build_temporal(
    expression: str | None,
    mentioned_at: datetime,
    stated_status: TimeStatus = "unknown",
    *,
    tz: tzinfo | None = None,
) -> Temporal:
    """A :class:`Temporal` from the model's verbatim wording and status and the source message's timestamp."""
    res = resolve(expression, mentioned_at, tz=tz)
    return Temporal(
        mentioned_at=mentioned_at,
        happened_start=res.start,
        happened_end=res.end,
        original=res.original,
        precision=res.precision,
        basis=res.basis,
        status=status_for(res, mentioned_at, stated_status),
    )


# --- calendar helpers -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ctx:
    today: date
    zone: tzinfo


@dataclass(frozen=True)
class _Win:
    start: datetime
    end: datetime
    precision: Precision
    basis: Basis


def _midnight(d: date, ctx: _Ctx) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=ctx.zone)


def _add_months(year: int, month: int, n: int) -> tuple[int, int]:
    y, m = divmod(year * 12 + (month - 1) + n, 12)
    return y, m + 1


def _day(d: date, ctx: _Ctx, basis: Basis) -> _Win:
    return _Win(_midnight(d, ctx), _midnight(d + timedelta(days=1), ctx), "day", basis)


def _monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _week(monday: date, ctx: _Ctx, basis: Basis) -> _Win:
    return _Win(_midnight(monday, ctx), _midnight(monday + timedelta(days=7), ctx), "week", basis)


def _month(year: int, month: int, ctx: _Ctx, basis: Basis, months: int = 1) -> _Win:
    ny, nm = _add_months(year, month, months)
    precision: Precision = "month" if months == 1 else "range"
    return _Win(_midnight(date(year, month, 1), ctx), _midnight(date(ny, nm, 1), ctx), precision, basis)


def _year(year: int, ctx: _Ctx, basis: Basis) -> _Win:
    return _Win(_midnight(date(year, 1, 1), ctx), _midnight(date(year + 1, 1, 1), ctx), "year", basis)


def _quarter(year: int, quarter: int, ctx: _Ctx, basis: Basis) -> _Win:
    return _month(year, 3 * (quarter - 1) + 1, ctx, basis, months=3)


def _shift(unit: str, n: int, ctx: _Ctx) -> _Win:
    """The whole calendar unit ``n`` units away from the mention day (n may be negative)."""
    t = ctx.today
    if unit == "day":
        return _day(t + timedelta(days=n), ctx, "relative")
    if unit == "week":
        return _week(_monday(t) + timedelta(weeks=n), ctx, "relative")
    if unit == "month":
        return _month(*_add_months(t.year, t.month, n), ctx, "relative")
    if unit == "year":
        return _year(t.year + n, ctx, "relative")
    if unit == "quarter":
        y, q = divmod(t.year * 4 + (t.month - 1) // 3 + n, 4)
        return _quarter(y, q + 1, ctx, "relative")
    if unit == "weekend":
        saturday = _monday(t) + timedelta(weeks=n, days=5)
        return _Win(_midnight(saturday, ctx), _midnight(saturday + timedelta(days=2), ctx), "range", "relative")
    raise ValueError(unit)


# --- numbers ----------------------------------------------------------------------------------------------------

_EN_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
}  # fmt: skip
_CN_DIGITS = {
    "零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
}  # fmt: skip
_CN_UNITS = {"十": 10, "百": 100, "千": 1000}
_CN_CHARS = "".join(_CN_DIGITS) + "".join(_CN_UNITS)
_MAX_COUNT = 100_000


def _number(token: str) -> int:
    """An English or Chinese count: digits, "three", "a", "十二", "两", "一百零五". Raises ValueError otherwise."""
    t = token.strip().lower()
    if t.isdigit():
        n = int(t)
    elif t in _EN_NUMBERS:
        n = _EN_NUMBERS[t]
    elif t and all(c in _CN_CHARS for c in t):
        n = _cn_number(t)
    else:
        raise ValueError(token)
    if n > _MAX_COUNT:
        raise ValueError(token)
    return n


def _cn_number(t: str) -> int:
    if not any(c in _CN_UNITS for c in t):
        if len(t) == 1:
            return _CN_DIGITS[t]
        # "三五天" / "两三天" mean "three or five" / "two or three": vague, not 35 / 23. Only 〇-style years read
        # digit by digit.
        if any(c in "零〇" for c in t):
            return int("".join(str(_CN_DIGITS[c]) for c in t))
        raise ValueError(t)
    total, current = 0, 0
    for c in t:
        if c in _CN_DIGITS:
            current = _CN_DIGITS[c]
        else:
            total += (current or 1) * _CN_UNITS[c]
            current = 0
    return total + current


# --- patterns ---------------------------------------------------------------------------------------------------

# ASCII: \b and \w must not treat CJK as letters, so "我们next week" and "下周or next week" still match.
_I = re.IGNORECASE | re.ASCII
_EN_NUM = r"(?P<n>\d{1,6}|" + "|".join(sorted(_EN_NUMBERS, key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WD = r"(?P<wd>" + "|".join(_WEEKDAYS) + r")"
_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12, "jan": 1, "feb": 2, "mar": 3, "apr": 4,
    "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_MON = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\b\.?"
_ORD = r"(?:st|nd|rd|th)?"
_REL = {"this": 0, "next": 1, "last": -1}

_CN_NUM = rf"(?<![\d{_CN_CHARS}几多])(?P<n>\d{{1,6}}|[{_CN_CHARS}]+)"
_CN_SMALL = rf"(?:\d{{1,2}}|[{_CN_CHARS}]{{1,3}})"
_CN_WEEK = r"(?:周(?![期年岁边围刊报])|星期|礼拜)"
_CN_PREFIX = {"下下": 2, "上上": -2, "下": 1, "上": -1, "这": 0, "本": 0, "": 0}
_CN_WD = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
# A weekday character, except 一 starting a word ("这周一直很忙" is "busy all this week", not Monday).
_CN_WD_CHAR = r"(?:[二三四五六日天]|一(?![直起定样般切些点下共旦边]))"
_CN_YEAR_WORDS = {"大前年": -3, "前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2, "大后年": 3}
_CN_DAY_WORDS = {
    "大前天": -3, "前天": -2, "昨天": -1, "昨日": -1, "昨晚": -1, "昨儿": -1, "今天": 0, "今日": 0, "今晚": 0,
    "今早": 0, "今儿": 0, "明天": 1, "明日": 1, "明早": 1, "明晚": 1, "明儿": 1, "后天": 2, "大后天": 3,
}  # fmt: skip

Handler = Callable[[re.Match[str], _Ctx], _Win | None]
_RULES: list[tuple[str, int, Handler]] = []


def _rule(pattern: str, flags: int = 0) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        _RULES.append((pattern, flags, handler))
        return handler

    return register


@functools.cache
def _compiled_rules() -> tuple[tuple[re.Pattern[str], Handler], ...]:
    """The rules' patterns, compiled on the first resolve (importing the module is on the sidecar's start path)."""
    return tuple((re.compile(pattern, flags), handler) for pattern, flags, handler in _RULES)


def _day_shift(n: int) -> Handler:
    """The handler of a day word ("yesterday", "明天"): ``n`` days from the anchor."""
    return lambda m, ctx: _shift("day", n, ctx)


def _recurring(m: re.Match[str]) -> bool:
    """ "every Friday", "each month": a recurrence, not one occurrence."""
    return re.search(r"\b(?:every|each)\s+$", m.string[: m.start()], _I) is not None


def _rel_word(word: str | None) -> int:
    return _REL[word.lower()] if word else 0


# English: relative days.
_EN_DAYS = {
    r"(?:the\s+)?day\s+after\s+tomorrow": 2,
    r"(?:the\s+)?day\s+before\s+yesterday": -2,
    r"tomorrow": 1,
    r"yesterday": -1,
    r"today|tonight|this\s+(?:morning|afternoon|evening)": 0,
}
for _pattern, _offset in _EN_DAYS.items():
    _rule(rf"\b(?:{_pattern})\b", _I)(_day_shift(_offset))


def _en_in_n(m: re.Match[str], ctx: _Ctx) -> _Win:
    return _shift(m["unit"].lower(), _number(m["n"]), ctx)


_rule(rf"\bin\s+{_EN_NUM}\s+{_UNIT}\b", _I)(_en_in_n)
_rule(rf"\b{_EN_NUM}\s+{_UNIT}\s+from\s+now\b", _I)(_en_in_n)


@_rule(rf"\b{_EN_NUM}\s+{_UNIT}\s+ago\b", _I)
def _en_n_ago(m: re.Match[str], ctx: _Ctx) -> _Win:
    return _shift(m["unit"].lower(), -_number(m["n"]), ctx)


@_rule(r"\b(?P<rel>this|next|last)\s+(?P<unit>week|month|year|quarter|weekend)\b", _I)
def _en_this_next_last(m: re.Match[str], ctx: _Ctx) -> _Win | None:
    if _recurring(m):
        return None
    return _shift(m["unit"].lower(), _rel_word(m["rel"]), ctx)


@_rule(r"\bthe\s+(?P<unit>week|month|year)\s+(?P<dir>after\s+next|before\s+last)\b", _I)
def _en_after_next(m: re.Match[str], ctx: _Ctx) -> _Win:
    return _shift(m["unit"].lower(), 2 if m["dir"].lower().startswith("after") else -2, ctx)


# English: weekdays.
@_rule(
    rf"\b(?:(?P<rel>this|next|last)\s+week(?:'s)?\s+(?:on\s+)?{_WD}"
    rf"|{_WD.replace('wd', 'wd2')}\s+(?:of\s+)?(?P<rel2>this|next|last)\s+week)\b",
    _I,
)
def _en_weekday_of_week(m: re.Match[str], ctx: _Ctx) -> _Win:
    wd = _WEEKDAYS.index((m["wd"] or m["wd2"]).lower())
    offset = _rel_word(m["rel"] or m["rel2"])
    return _day(_monday(ctx.today) + timedelta(weeks=offset, days=wd), ctx, "relative")


@_rule(rf"\b(?:(?P<rel>this|next|last)\s+)?{_WD}\b", _I)
def _en_weekday(m: re.Match[str], ctx: _Ctx) -> _Win | None:
    if _recurring(m):
        return None
    wd = _WEEKDAYS.index(m["wd"].lower())
    rel = (m["rel"] or "this").lower()
    if rel == "last":  # the most recent one strictly before today
        back = (ctx.today.weekday() - wd) % 7 or 7
        return _day(ctx.today - timedelta(days=back), ctx, "relative")
    return _day(_monday(ctx.today) + timedelta(weeks=_REL[rel], days=wd), ctx, "relative")


# English: named months and absolute dates.
def _month_of(m: re.Match[str]) -> int:
    return _MONTHS[m["mon"].lower()]


def _modal_may(m: re.Match[str]) -> bool:
    return m["mon"] == "may"


@_rule(rf"\b(?P<rel>in|this|next|last)\s+{_MON}(?!\s*,?\s*\d)", _I)
def _en_named_month(m: re.Match[str], ctx: _Ctx) -> _Win:
    month, today = _month_of(m), ctx.today
    rel = m["rel"].lower()
    year = today.year
    if rel == "in":
        year += month < today.month
    elif rel == "next":
        year += month <= today.month
    elif rel == "last":
        year -= month >= today.month
    return _month(year, month, ctx, "relative")


@_rule(
    rf"\b(?:(?:by|until|till|before)\s+(?:the\s+)?(?:(?:end|middle|start|beginning)\s+of\s+|mid-?\s*|early\s+|late\s+)?"
    rf"|(?:the\s+)?(?:end|middle|start|beginning)\s+of\s+|mid-)(?:the\s+month\s+of\s+)?{_MON}(?!\s*,?\s*\d)",
    _I,
)
def _en_deadline_month(m: re.Match[str], ctx: _Ctx) -> _Win | None:
    """ "by March", "by the end of March", "mid-June": that month, the first on or after the mention's."""
    if _modal_may(m):
        return None
    month, today = _month_of(m), ctx.today
    return _month(today.year + (month < today.month), month, ctx, "relative")


@_rule(
    r"\b(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?(?P<unit>day|week|month|year|quarter)\b|\b(?P<abbr>eod|eow|eom|eoy)\b",
    _I,
)
def _en_end_of(m: re.Match[str], ctx: _Ctx) -> _Win:
    """ "by the end of the week", "EOD": the current unit (the end is a deadline, the window is the unit)."""
    unit = m["unit"] or {"eod": "day", "eow": "week", "eom": "month", "eoy": "year"}[m["abbr"].lower()]
    return _shift(unit.lower(), 0, ctx)


def _within(unit: str, n: int, ctx: _Ctx) -> _Win:
    start = _midnight(ctx.today, ctx)
    if unit == "day":
        end = _midnight(ctx.today + timedelta(days=n), ctx)
    elif unit == "week":
        end = _midnight(ctx.today + timedelta(weeks=n), ctx)
    else:
        months = n * (12 if unit == "year" else 1)
        y, mo = _add_months(ctx.today.year, ctx.today.month, months)
        end = _midnight(date(y, mo, min(ctx.today.day, 28)), ctx)
    return _Win(start, end, "range", "relative")


@_rule(rf"\bwithin\s+(?:the\s+next\s+)?{_EN_NUM}\s+{_UNIT}\b", _I)
def _en_within(m: re.Match[str], ctx: _Ctx) -> _Win | None:
    """ "within two weeks": from the mention day to that many units on (a range)."""
    n = _number(m["n"])
    return _within(m["unit"].lower(), n, ctx) if n else None


@_rule(rf"\b{_MON}\s*(?P<d>\d{{1,2}}){_ORD}(?:\s*,\s*|\s+)(?P<y>\d{{4}})\b", _I)
def _en_mdy(m: re.Match[str], ctx: _Ctx) -> _Win:
    return _day(date(int(m["y"]), _month_of(m), int(m["d"])), ctx, "explicit")


@_rule(rf"\b(?P<d>\d{{1,2}}){_ORD}\s+(?:of\s+)?{_MON},?\s+(?P<y>\d{{4}})\b", _I)
def _en_dmy(m: re.Match[str], ctx: _Ctx) -> _Win:
    return _day(date(int(m["y"]), _month_of(m), int(m["d"])), ctx, "explicit")


@_rule(rf"\b{_MON},?\s+(?P<y>\d{{4}})\b", _I)
def _en_my(m: re.Match[str], ctx: _Ctx) -> _Win:
    return _month(int(m["y"]), _month_of(m), ctx, "explicit")


@_rule(rf"\b{_MON}\s*(?P<d>\d{{1,2}}){_ORD}\b(?!\s*[:.]\d)", _I)
def _en_md(m: re.Match[str], ctx: _Ctx) -> _Win | None:
    if _modal_may(m):
        return None
    return _day(date(ctx.today.year, _month_of(m), int(m["d"])), ctx, "explicit")


@_rule(rf"\b(?P<d>\d{{1,2}}){_ORD}\s+(?:of\s+)?{_MON}", _I)
def _en_dm(m: re.Match[str], ctx: _Ctx) -> _Win | None:
    if _modal_may(m):
        return None
    return _day(date(ctx.today.year, _month_of(m), int(m["d"])), ctx, "explicit")


# Numeric dates.
@_rule(
    r"(?<![\d.:/-])(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})"
    r"(?:[T ](?P<H>\d{2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?:[.,](?P<f>\d{1,6}))?)?(?P<tz>Z|[+-]\d{2}:?\d{2})?)?(?![\d:])",
    _I,
)
def _iso(m: re.Match[str], ctx: _Ctx) -> _Win:
    day = date(int(m["y"]), int(m["mo"]), int(m["d"]))
    if m["H"] is None:
        return _day(day, ctx, "explicit")
    zone: tzinfo = ctx.zone
    if m["tz"]:
        if m["tz"].upper() == "Z":
            zone = UTC
        else:
            sign = -1 if m["tz"][0] == "-" else 1
            hh, mm = int(m["tz"][1:3]), int(m["tz"][-2:])
            zone = timezone(sign * timedelta(hours=hh, minutes=mm))
    micro = int(m["f"].ljust(6, "0")) if m["f"] else 0
    start = datetime(day.year, day.month, day.day, int(m["H"]), int(m["M"]), int(m["S"] or 0), micro, tzinfo=zone)
    step = timedelta(minutes=1) if m["S"] is None else timedelta(seconds=1) if m["f"] is None else timedelta(0, 0, 1)
    return _Win(start, start + step, "instant", "explicit")


@_rule(r"(?<![\d.:/-])(?P<y>\d{4})(?P<sep>[/.])(?P<mo>\d{1,2})(?P=sep)(?P<d>\d{1,2})(?![\d/.]\d|\d)")
def _ymd_slash(m: re.Match[str], ctx: _Ctx) -> _Win:
    return _day(date(int(m["y"]), int(m["mo"]), int(m["d"])), ctx, "explicit")


@_rule(r"(?<![\d.:/-])(?P<y>\d{4})-(?P<mo>\d{2})(?![\d-])")
def _iso_month(m: re.Match[str], ctx: _Ctx) -> _Win:
    return _month(int(m["y"]), int(m["mo"]), ctx, "explicit")


@_rule(r"\b(?:in|during|throughout)\s+(?P<y>(?:19|20|21)\d{2})\b(?![-/.:]\d)", _I)
def _en_in_year(m: re.Match[str], ctx: _Ctx) -> _Win:
    return _year(int(m["y"]), ctx, "explicit")


@_rule(r"^\s*(?P<x>(?:19|20|21)\d{2})\s*[.!?]?\s*$")
def _bare_year(m: re.Match[str], ctx: _Ctx) -> _Win:
    return _year(int(m["x"]), ctx, "explicit")


@_rule(r"\bQ(?P<q>[1-4])\s*,?\s*(?P<y>\d{4})\b|\b(?P<y2>\d{4})\s*-?\s*Q(?P<q2>[1-4])\b", _I)
def _en_quarter(m: re.Match[str], ctx: _Ctx) -> _Win:
    return _quarter(int(m["y"] or m["y2"]), int(m["q"] or m["q2"]), ctx, "explicit")


# Chinese: days. 前/后 also end words such as 以前, 之后, 然后, 最后 ("以前天气", "然后天天", "然后年底").
_CN_GUARD = r"(?<![\d以之然最先落背午此目提从向面])"
for _word, _offset in _CN_DAY_WORDS.items():
    _rule((_CN_GUARD if _word in ("前天", "后天") else "") + _word)(_day_shift(_offset))


_CN_AGO = r"(?:以|之)?(?P<dir>[后前])"


@_rule(rf"{_CN_NUM}(?P<unit>[天日]|个?(?:周|星期|礼拜)|个月){_CN_AGO}")
def _cn_n_units(m: re.Match[str], ctx: _Ctx) -> _Win:
    unit = {"天": "day", "日": "day", "个月": "month"}.get(m["unit"], "week")
    n = _number(m["n"])
    return _shift(unit, n if m["dir"] == "后" else -n, ctx)


@_rule(rf"(?<![\d{_CN_CHARS}几多])(?P<n>\d{{1,3}}|[{_CN_CHARS}]+)年{_CN_AGO}")
def _cn_n_years(m: re.Match[str], ctx: _Ctx) -> _Win:
    n = _number(m["n"])
    return _shift("year", n if m["dir"] == "后" else -n, ctx)


# Chinese: weeks, weekdays, weekends, months, quarters.
_CN_PRE = r"(?P<pre>下下|上上|下|上|这|本)"


@_rule(rf"(?<![每马]){_CN_PRE}个?{_CN_WEEK}(?!{_CN_WD_CHAR}|末)")
def _cn_week(m: re.Match[str], ctx: _Ctx) -> _Win:
    return _shift("week", _CN_PREFIX[m["pre"]], ctx)


@_rule(rf"(?<![每马\d{_CN_CHARS}几]){_CN_PRE}?个?{_CN_WEEK}(?P<wd>{_CN_WD_CHAR})(?![次遍趟])")
def _cn_weekday(m: re.Match[str], ctx: _Ctx) -> _Win | None:
    if m["pre"] is None and m.group(0).startswith("个"):
        return None
    weeks = _CN_PREFIX[m["pre"] or ""]
    return _day(_monday(ctx.today) + timedelta(weeks=weeks, days=_CN_WD[m["wd"]]), ctx, "relative")


@_rule(rf"(?<![每马\d{_CN_CHARS}几]){_CN_PRE}?个?周末")
def _cn_weekend(m: re.Match[str], ctx: _Ctx) -> _Win | None:
    if m["pre"] is None and m.group(0).startswith("个"):
        return None
    return _shift("weekend", _CN_PREFIX[m["pre"] or ""], ctx)


@_rule(rf"{_CN_NUM}(?P<unit>[天日]|个?(?:周|星期|礼拜)|个月)(?:之内|以内|内)")
def _cn_within(m: re.Match[str], ctx: _Ctx) -> _Win | None:
    """ "两周内", "三天之内": from the mention day to that many units on (a range)."""
    unit = {"天": "day", "日": "day", "个月": "month"}.get(m["unit"], "week")
    n = _number(m["n"])
    return _within(unit, n, ctx) if n else None


@_rule(r"(?<!然后)(?:月底|月末)")  # "然后" is "then", not a time
def _cn_month_end(m: re.Match[str], ctx: _Ctx) -> _Win:
    """ "月底前": this month (a month named before it, "3月底" / "下个月底", starts earlier and wins)."""
    return _shift("month", 0, ctx)


@_rule(r"(?<!然后)(?:年底|年末)")
def _cn_year_end(m: re.Match[str], ctx: _Ctx) -> _Win:
    return _shift("year", 0, ctx)


@_rule(rf"{_CN_PRE}个?月")
def _cn_month(m: re.Match[str], ctx: _Ctx) -> _Win:
    return _shift("month", _CN_PREFIX[m["pre"]], ctx)


@_rule(rf"{_CN_PRE}个?季度")
def _cn_quarter(m: re.Match[str], ctx: _Ctx) -> _Win:
    return _shift("quarter", _CN_PREFIX[m["pre"]], ctx)


_CN_YEAR_PREFIX = r"(?:(?P<y>\d{4})年|(?P<yw>" + "|".join(sorted(_CN_YEAR_WORDS, key=len, reverse=True)) + r"))"


def _cn_year(m: re.Match[str], ctx: _Ctx) -> tuple[int, Basis]:
    if m["y"]:
        return int(m["y"]), "explicit"
    if m["yw"]:
        return ctx.today.year + _CN_YEAR_WORDS[m["yw"]], "relative"
    return ctx.today.year, "explicit"


@_rule(rf"(?<![\d{_CN_CHARS}]){_CN_YEAR_PREFIX}?第(?P<q>[1-4一二三四])季度")
def _cn_nth_quarter(m: re.Match[str], ctx: _Ctx) -> _Win:
    year, basis = _cn_year(m, ctx)
    return _quarter(year, _number(m["q"]), ctx, basis)


@_rule(rf"(?<![\d{_CN_CHARS}个]){_CN_YEAR_PREFIX}?(?P<mo>{_CN_SMALL})月份?(?:(?P<d>{_CN_SMALL})[日号])?")
def _cn_date(m: re.Match[str], ctx: _Ctx) -> _Win:
    year, basis = _cn_year(m, ctx)
    month = _number(m["mo"])
    if "两" in m["mo"] or not 1 <= month <= 12:  # "两月" is "two months", not February
        raise ValueError(m["mo"])
    if m["d"] is None:
        return _month(year, month, ctx, basis)
    return _day(date(year, month, _number(m["d"])), ctx, basis)


@_rule(rf"{_CN_GUARD}{_CN_YEAR_PREFIX}(?![前后])")
def _cn_year_only(m: re.Match[str], ctx: _Ctx) -> _Win:
    year, basis = _cn_year(m, ctx)
    return _year(year, ctx, basis)
