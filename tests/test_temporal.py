"""Event time: mention time vs occurrence time, and code-side resolution of relative time expressions."""

from __future__ import annotations

import calendar
import json
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from stratagate.events.temporal import Resolution, Temporal, build_temporal, resolve, status_for

CST = timezone(timedelta(hours=8))
WED = datetime(2026, 5, 6, 10, 0, tzinfo=CST)  # a Wednesday
SUN = datetime(2026, 5, 10, 18, 0, tzinfo=CST)  # a Sunday
SAT = datetime(2026, 5, 9, 18, 0, tzinfo=CST)  # a Saturday
NYE = datetime(2026, 12, 31, 9, 0, tzinfo=CST)  # a Thursday, last day of the year
JAN31 = datetime(2026, 1, 31, 9, 0, tzinfo=CST)
LEAP_JAN31 = datetime(2028, 1, 31, 9, 0, tzinfo=CST)
LEAP_MAR1 = datetime(2028, 3, 1, 9, 0, tzinfo=CST)
LEAP_DAY = datetime(2028, 2, 29, 9, 0, tzinfo=CST)


def test_acceptance_finish_the_prototype_next_week():
    """Milestone acceptance: "Finish the prototype next week" said on Wednesday 2026-05-06."""
    for tz in (timezone(timedelta(hours=8)), UTC):
        mentioned = datetime(2026, 5, 6, 10, 0, tzinfo=tz)
        r = resolve("Finish the prototype next week", mentioned)
        assert r.start == datetime(2026, 5, 11, 0, 0, tzinfo=tz)  # Monday
        assert r.end == datetime(2026, 5, 18, 0, 0, tzinfo=tz)
        assert r.start.weekday() == 0
        assert r.precision == "week"
        assert r.basis == "relative"
        assert r.original == "next week"


def _at(value: str, tz: tzinfo) -> datetime:
    """A date ("2026-05-11") → midnight in tz; a datetime string with an offset → that instant."""
    if "T" in value:
        return datetime.fromisoformat(value)
    return datetime.combine(date.fromisoformat(value), time(0), tzinfo=tz)


# (expression, mentioned_at, start, end, precision, basis, original)
CASES = [
    # English relative days
    ("today", WED, "2026-05-06", "2026-05-07", "day", "relative", "today"),
    ("tonight", WED, "2026-05-06", "2026-05-07", "day", "relative", "tonight"),
    ("this evening", WED, "2026-05-06", "2026-05-07", "day", "relative", "this evening"),
    ("yesterday", WED, "2026-05-05", "2026-05-06", "day", "relative", "yesterday"),
    ("Tomorrow", WED, "2026-05-07", "2026-05-08", "day", "relative", "Tomorrow"),
    ("the day after tomorrow", WED, "2026-05-08", "2026-05-09", "day", "relative", "the day after tomorrow"),
    ("the day before yesterday", WED, "2026-05-04", "2026-05-05", "day", "relative", "the day before yesterday"),
    ("in 3 days", WED, "2026-05-09", "2026-05-10", "day", "relative", "in 3 days"),
    ("in a day", WED, "2026-05-07", "2026-05-08", "day", "relative", "in a day"),
    ("3 days ago", WED, "2026-05-03", "2026-05-04", "day", "relative", "3 days ago"),
    ("THREE DAYS AGO", WED, "2026-05-03", "2026-05-04", "day", "relative", "THREE DAYS AGO"),
    ("twelve days from now", WED, "2026-05-18", "2026-05-19", "day", "relative", "twelve days from now"),
    # Chinese relative days
    ("今天", WED, "2026-05-06", "2026-05-07", "day", "relative", "今天"),
    ("今晚", WED, "2026-05-06", "2026-05-07", "day", "relative", "今晚"),
    ("昨天", WED, "2026-05-05", "2026-05-06", "day", "relative", "昨天"),
    ("明天", WED, "2026-05-07", "2026-05-08", "day", "relative", "明天"),
    ("后天", WED, "2026-05-08", "2026-05-09", "day", "relative", "后天"),
    ("前天", WED, "2026-05-04", "2026-05-05", "day", "relative", "前天"),
    ("大后天", WED, "2026-05-09", "2026-05-10", "day", "relative", "大后天"),
    ("大前天", WED, "2026-05-03", "2026-05-04", "day", "relative", "大前天"),
    ("3天后", WED, "2026-05-09", "2026-05-10", "day", "relative", "3天后"),
    ("三天前", WED, "2026-05-03", "2026-05-04", "day", "relative", "三天前"),
    ("两天后", WED, "2026-05-08", "2026-05-09", "day", "relative", "两天后"),
    ("十天以后", WED, "2026-05-16", "2026-05-17", "day", "relative", "十天以后"),
    ("二十一天前", WED, "2026-04-15", "2026-04-16", "day", "relative", "二十一天前"),
    # English weeks (ISO, Monday start)
    ("this week", WED, "2026-05-04", "2026-05-11", "week", "relative", "this week"),
    ("next week", WED, "2026-05-11", "2026-05-18", "week", "relative", "next week"),
    ("last week", WED, "2026-04-27", "2026-05-04", "week", "relative", "last week"),
    ("in 2 weeks", WED, "2026-05-18", "2026-05-25", "week", "relative", "in 2 weeks"),
    ("in a week", WED, "2026-05-11", "2026-05-18", "week", "relative", "in a week"),
    ("2 weeks ago", WED, "2026-04-20", "2026-04-27", "week", "relative", "2 weeks ago"),
    ("the week after next", WED, "2026-05-18", "2026-05-25", "week", "relative", "the week after next"),
    ("the week before last", WED, "2026-04-20", "2026-04-27", "week", "relative", "the week before last"),
    # Chinese weeks
    ("本周", WED, "2026-05-04", "2026-05-11", "week", "relative", "本周"),
    ("这周", WED, "2026-05-04", "2026-05-11", "week", "relative", "这周"),
    ("这个星期", WED, "2026-05-04", "2026-05-11", "week", "relative", "这个星期"),
    ("下周", WED, "2026-05-11", "2026-05-18", "week", "relative", "下周"),
    ("下个星期", WED, "2026-05-11", "2026-05-18", "week", "relative", "下个星期"),
    ("下星期", WED, "2026-05-11", "2026-05-18", "week", "relative", "下星期"),
    ("上周", WED, "2026-04-27", "2026-05-04", "week", "relative", "上周"),
    ("上个星期", WED, "2026-04-27", "2026-05-04", "week", "relative", "上个星期"),
    ("下下周", WED, "2026-05-18", "2026-05-25", "week", "relative", "下下周"),
    ("两周后", WED, "2026-05-18", "2026-05-25", "week", "relative", "两周后"),
    ("三个星期前", WED, "2026-04-13", "2026-04-20", "week", "relative", "三个星期前"),
    ("这周一直很忙", WED, "2026-05-04", "2026-05-11", "week", "relative", "这周"),
    # English weekdays: bare/"this" = current ISO week; "next" = next week; "last" = most recent before today
    ("on Friday", WED, "2026-05-08", "2026-05-09", "day", "relative", "Friday"),
    ("this Friday", WED, "2026-05-08", "2026-05-09", "day", "relative", "this Friday"),
    ("Monday", WED, "2026-05-04", "2026-05-05", "day", "relative", "Monday"),
    ("next Friday", WED, "2026-05-15", "2026-05-16", "day", "relative", "next Friday"),
    ("next Monday", WED, "2026-05-11", "2026-05-12", "day", "relative", "next Monday"),
    ("last Friday", WED, "2026-05-01", "2026-05-02", "day", "relative", "last Friday"),
    ("last Monday", WED, "2026-05-04", "2026-05-05", "day", "relative", "last Monday"),
    ("last Wednesday", WED, "2026-04-29", "2026-04-30", "day", "relative", "last Wednesday"),
    ("last Friday", SAT, "2026-05-08", "2026-05-09", "day", "relative", "last Friday"),
    ("on Friday", SAT, "2026-05-08", "2026-05-09", "day", "relative", "Friday"),
    ("next Friday", SUN, "2026-05-15", "2026-05-16", "day", "relative", "next Friday"),
    ("Friday next week", WED, "2026-05-15", "2026-05-16", "day", "relative", "Friday next week"),
    ("next week on Friday", WED, "2026-05-15", "2026-05-16", "day", "relative", "next week on Friday"),
    ("Tuesday of last week", WED, "2026-04-28", "2026-04-29", "day", "relative", "Tuesday of last week"),
    ("Sunday", WED, "2026-05-10", "2026-05-11", "day", "relative", "Sunday"),
    # Chinese weekdays
    ("下周五", WED, "2026-05-15", "2026-05-16", "day", "relative", "下周五"),
    ("下个星期一", WED, "2026-05-11", "2026-05-12", "day", "relative", "下个星期一"),
    ("上周五", WED, "2026-05-01", "2026-05-02", "day", "relative", "上周五"),
    ("上个礼拜三", WED, "2026-04-29", "2026-04-30", "day", "relative", "上个礼拜三"),
    ("周五", WED, "2026-05-08", "2026-05-09", "day", "relative", "周五"),
    ("星期五", WED, "2026-05-08", "2026-05-09", "day", "relative", "星期五"),
    ("礼拜五", WED, "2026-05-08", "2026-05-09", "day", "relative", "礼拜五"),
    ("这周五", WED, "2026-05-08", "2026-05-09", "day", "relative", "这周五"),
    ("周一", WED, "2026-05-04", "2026-05-05", "day", "relative", "周一"),
    ("星期天", WED, "2026-05-10", "2026-05-11", "day", "relative", "星期天"),
    ("周日", SUN, "2026-05-10", "2026-05-11", "day", "relative", "周日"),
    ("下下周五", WED, "2026-05-22", "2026-05-23", "day", "relative", "下下周五"),
    ("马上周五要交", WED, "2026-05-08", "2026-05-09", "day", "relative", "周五"),
    # English months
    ("this month", WED, "2026-05-01", "2026-06-01", "month", "relative", "this month"),
    ("next month", WED, "2026-06-01", "2026-07-01", "month", "relative", "next month"),
    ("last month", WED, "2026-04-01", "2026-05-01", "month", "relative", "last month"),
    ("in 2 months", WED, "2026-07-01", "2026-08-01", "month", "relative", "in 2 months"),
    ("3 months ago", WED, "2026-02-01", "2026-03-01", "month", "relative", "3 months ago"),
    ("in ten months", WED, "2027-03-01", "2027-04-01", "month", "relative", "in ten months"),
    # Named months: "in" = on or after the mention month; "next" = strictly after; "last" = strictly before
    ("in June", WED, "2026-06-01", "2026-07-01", "month", "relative", "in June"),
    ("in May", WED, "2026-05-01", "2026-06-01", "month", "relative", "in May"),
    ("in April", WED, "2027-04-01", "2027-05-01", "month", "relative", "in April"),
    ("next May", WED, "2027-05-01", "2027-06-01", "month", "relative", "next May"),
    ("next June", WED, "2026-06-01", "2026-07-01", "month", "relative", "next June"),
    ("last May", WED, "2025-05-01", "2025-06-01", "month", "relative", "last May"),
    ("last April", WED, "2026-04-01", "2026-05-01", "month", "relative", "last April"),
    ("this January", WED, "2026-01-01", "2026-02-01", "month", "relative", "this January"),
    # Chinese months
    ("本月", WED, "2026-05-01", "2026-06-01", "month", "relative", "本月"),
    ("这个月", WED, "2026-05-01", "2026-06-01", "month", "relative", "这个月"),
    ("下个月", WED, "2026-06-01", "2026-07-01", "month", "relative", "下个月"),
    ("上个月", WED, "2026-04-01", "2026-05-01", "month", "relative", "上个月"),
    ("上上个月", WED, "2026-03-01", "2026-04-01", "month", "relative", "上上个月"),
    ("三个月后", WED, "2026-08-01", "2026-09-01", "month", "relative", "三个月后"),
    ("两个月前", WED, "2026-03-01", "2026-04-01", "month", "relative", "两个月前"),
    # English years
    ("this year", WED, "2026-01-01", "2027-01-01", "year", "relative", "this year"),
    ("next year", WED, "2027-01-01", "2028-01-01", "year", "relative", "next year"),
    ("last year", WED, "2025-01-01", "2026-01-01", "year", "relative", "last year"),
    ("two years ago", WED, "2024-01-01", "2025-01-01", "year", "relative", "two years ago"),
    ("in 3 years", WED, "2029-01-01", "2030-01-01", "year", "relative", "in 3 years"),
    ("in 2027", WED, "2027-01-01", "2028-01-01", "year", "explicit", "in 2027"),
    # Chinese years
    ("今年", WED, "2026-01-01", "2027-01-01", "year", "relative", "今年"),
    ("明年", WED, "2027-01-01", "2028-01-01", "year", "relative", "明年"),
    ("去年", WED, "2025-01-01", "2026-01-01", "year", "relative", "去年"),
    ("前年", WED, "2024-01-01", "2025-01-01", "year", "relative", "前年"),
    ("后年", WED, "2028-01-01", "2029-01-01", "year", "relative", "后年"),
    ("两年前", WED, "2024-01-01", "2025-01-01", "year", "relative", "两年前"),
    ("5年后", WED, "2031-01-01", "2032-01-01", "year", "relative", "5年后"),
    # Absolute dates
    ("2026-05-11", WED, "2026-05-11", "2026-05-12", "day", "explicit", "2026-05-11"),
    ("May 11, 2026", WED, "2026-05-11", "2026-05-12", "day", "explicit", "May 11, 2026"),
    ("may 11 2026", WED, "2026-05-11", "2026-05-12", "day", "explicit", "may 11 2026"),
    ("Sept. 3rd, 2027", WED, "2027-09-03", "2027-09-04", "day", "explicit", "Sept. 3rd, 2027"),
    ("11 May 2026", WED, "2026-05-11", "2026-05-12", "day", "explicit", "11 May 2026"),
    ("the 1st of March, 2027", WED, "2027-03-01", "2027-03-02", "day", "explicit", "1st of March, 2027"),
    ("May 2026", WED, "2026-05-01", "2026-06-01", "month", "explicit", "May 2026"),
    ("in May 2026", WED, "2026-05-01", "2026-06-01", "month", "explicit", "May 2026"),
    ("2026", WED, "2026-01-01", "2027-01-01", "year", "explicit", "2026"),
    ("May 11", WED, "2026-05-11", "2026-05-12", "day", "explicit", "May 11"),
    ("3 Jan", WED, "2026-01-03", "2026-01-04", "day", "explicit", "3 Jan"),
    ("2026-07", WED, "2026-07-01", "2026-08-01", "month", "explicit", "2026-07"),
    ("2026/5/11", WED, "2026-05-11", "2026-05-12", "day", "explicit", "2026/5/11"),
    ("2026年5月11日", WED, "2026-05-11", "2026-05-12", "day", "explicit", "2026年5月11日"),
    ("5月11日", WED, "2026-05-11", "2026-05-12", "day", "explicit", "5月11日"),
    ("5月11号", WED, "2026-05-11", "2026-05-12", "day", "explicit", "5月11号"),
    ("五月十一日", WED, "2026-05-11", "2026-05-12", "day", "explicit", "五月十一日"),
    ("2026年5月", WED, "2026-05-01", "2026-06-01", "month", "explicit", "2026年5月"),
    ("十二月份", WED, "2026-12-01", "2027-01-01", "month", "explicit", "十二月份"),
    ("2027年", WED, "2027-01-01", "2028-01-01", "year", "explicit", "2027年"),
    ("明年3月", WED, "2027-03-01", "2027-04-01", "month", "relative", "明年3月"),
    ("去年12月25日", WED, "2025-12-25", "2025-12-26", "day", "relative", "去年12月25日"),
    # ISO datetimes → instants, one unit of the finest field written
    ("2026-05-11T09:30:00+08:00", WED, "2026-05-11T09:30:00+08:00", "2026-05-11T09:30:01+08:00", "instant",
     "explicit", "2026-05-11T09:30:00+08:00"),
    ("2026-05-11T01:30:00Z", WED, "2026-05-11T01:30:00+00:00", "2026-05-11T01:30:01+00:00", "instant",
     "explicit", "2026-05-11T01:30:00Z"),
    ("2026-05-11 09:30", WED, "2026-05-11T09:30:00+08:00", "2026-05-11T09:31:00+08:00", "instant",
     "explicit", "2026-05-11 09:30"),
    ("2026-05-11T09:30:00.250-05:00", WED, "2026-05-11T09:30:00.250-05:00", "2026-05-11T09:30:00.250001-05:00",
     "instant", "explicit", "2026-05-11T09:30:00.250-05:00"),
    # Quarters and weekends ("range")
    ("this quarter", WED, "2026-04-01", "2026-07-01", "range", "relative", "this quarter"),
    ("next quarter", NYE, "2027-01-01", "2027-04-01", "range", "relative", "next quarter"),
    ("下季度", WED, "2026-07-01", "2026-10-01", "range", "relative", "下季度"),
    ("Q3 2026", WED, "2026-07-01", "2026-10-01", "range", "explicit", "Q3 2026"),
    ("2026年第四季度", WED, "2026-10-01", "2027-01-01", "range", "explicit", "2026年第四季度"),
    ("this weekend", WED, "2026-05-09", "2026-05-11", "range", "relative", "this weekend"),
    ("下周末", WED, "2026-05-16", "2026-05-18", "range", "relative", "下周末"),
    ("周末", WED, "2026-05-09", "2026-05-11", "range", "relative", "周末"),
    # Year and month boundaries
    ("next week", NYE, "2027-01-04", "2027-01-11", "week", "relative", "next week"),
    ("this week", NYE, "2026-12-28", "2027-01-04", "week", "relative", "this week"),
    ("tomorrow", NYE, "2027-01-01", "2027-01-02", "day", "relative", "tomorrow"),
    ("明年", NYE, "2027-01-01", "2028-01-01", "year", "relative", "明年"),
    ("next month", NYE, "2027-01-01", "2027-02-01", "month", "relative", "next month"),
    ("下个月", NYE, "2027-01-01", "2027-02-01", "month", "relative", "下个月"),
    ("next month", JAN31, "2026-02-01", "2026-03-01", "month", "relative", "next month"),
    ("in 1 month", JAN31, "2026-02-01", "2026-03-01", "month", "relative", "in 1 month"),
    ("last month", JAN31, "2025-12-01", "2026-01-01", "month", "relative", "last month"),
    # Leap years
    ("next month", LEAP_JAN31, "2028-02-01", "2028-03-01", "month", "relative", "next month"),
    ("yesterday", LEAP_MAR1, "2028-02-29", "2028-03-01", "day", "relative", "yesterday"),
    ("Feb 29, 2028", WED, "2028-02-29", "2028-03-01", "day", "explicit", "Feb 29, 2028"),
    ("2月29日", LEAP_DAY, "2028-02-29", "2028-03-01", "day", "explicit", "2月29日"),
    ("a year ago", LEAP_DAY, "2027-01-01", "2028-01-01", "year", "relative", "a year ago"),
    ("in 365 days", datetime(2028, 1, 1, 12, tzinfo=CST), "2028-12-31", "2029-01-01", "day", "relative",
     "in 365 days"),
    # Sunday mentions: weeks start on Monday
    ("next week", SUN, "2026-05-11", "2026-05-18", "week", "relative", "next week"),
    ("this week", SUN, "2026-05-04", "2026-05-11", "week", "relative", "this week"),
    ("下周", SUN, "2026-05-11", "2026-05-18", "week", "relative", "下周"),
    ("本周", SUN, "2026-05-04", "2026-05-11", "week", "relative", "本周"),
    ("last week", SUN, "2026-04-27", "2026-05-04", "week", "relative", "last week"),
    # Surrounding words; first match wins, the longest at equal starts
    ("Finish the prototype next week", WED, "2026-05-11", "2026-05-18", "week", "relative", "next week"),
    ("let's finish the prototype next week", WED, "2026-05-11", "2026-05-18", "week", "relative", "next week"),
    ("soon, maybe next week", WED, "2026-05-11", "2026-05-18", "week", "relative", "next week"),
    ("Tomorrow or next week", WED, "2026-05-07", "2026-05-08", "day", "relative", "Tomorrow"),
    ("from Monday to Friday", WED, "2026-05-04", "2026-05-05", "day", "relative", "Monday"),
    ("we decided to migrate on 2026-05-20 at the latest", WED, "2026-05-20", "2026-05-21", "day", "explicit",
     "2026-05-20"),
    ("我们下周五之前上线", WED, "2026-05-15", "2026-05-16", "day", "relative", "下周五"),
    ("原型下周完成", WED, "2026-05-11", "2026-05-18", "week", "relative", "下周"),
    ("我们next week再说", WED, "2026-05-11", "2026-05-18", "week", "relative", "next week"),
    ("Ship it later today", WED, "2026-05-06", "2026-05-07", "day", "relative", "today"),
    # Deadlines: "by <month>" is that month (first on or after the mention's), "end of <unit>" the current unit,
    # "within N units" the range from the mention day; 月底/年底 this month/year, N周内 a range.
    ("We plan to ship v2 by the end of March", WED, "2027-03-01", "2027-04-01", "month", "relative",
     "by the end of March"),
    ("by March", WED, "2027-03-01", "2027-04-01", "month", "relative", "by March"),
    ("done by May", WED, "2026-05-01", "2026-06-01", "month", "relative", "by May"),
    ("before June", WED, "2026-06-01", "2026-07-01", "month", "relative", "before June"),
    ("until the end of July", WED, "2026-07-01", "2026-08-01", "month", "relative", "until the end of July"),
    ("the beginning of August", WED, "2026-08-01", "2026-09-01", "month", "relative", "the beginning of August"),
    ("migrate by mid-June", WED, "2026-06-01", "2026-07-01", "month", "relative", "by mid-June"),
    ("end of next month", WED, "2026-06-01", "2026-07-01", "month", "relative", "next month"),
    ("by the end of the week", WED, "2026-05-04", "2026-05-11", "week", "relative", "the end of the week"),
    ("by the end of this month", WED, "2026-05-01", "2026-06-01", "month", "relative", "the end of this month"),
    ("end of the year", WED, "2026-01-01", "2027-01-01", "year", "relative", "end of the year"),
    ("send it by EOD", WED, "2026-05-06", "2026-05-07", "day", "relative", "EOD"),
    ("by EOW", WED, "2026-05-04", "2026-05-11", "week", "relative", "EOW"),
    ("in two weeks", WED, "2026-05-18", "2026-05-25", "week", "relative", "in two weeks"),
    ("by Friday", WED, "2026-05-08", "2026-05-09", "day", "relative", "Friday"),
    ("before the release on May 20", WED, "2026-05-20", "2026-05-21", "day", "explicit", "May 20"),
    ("freeze the API within two weeks", WED, "2026-05-06", "2026-05-20", "range", "relative", "within two weeks"),
    ("within the next 3 days", WED, "2026-05-06", "2026-05-09", "range", "relative", "within the next 3 days"),
    ("我们计划月底前发布", WED, "2026-05-01", "2026-06-01", "month", "relative", "月底"),
    ("打算年底交付", WED, "2026-01-01", "2027-01-01", "year", "relative", "年底"),
    ("3月底", WED, "2026-03-01", "2026-04-01", "month", "explicit", "3月"),
    ("下个月底完成", WED, "2026-06-01", "2026-07-01", "month", "relative", "下个月"),
    ("两周内上线", WED, "2026-05-06", "2026-05-20", "range", "relative", "两周内"),
    ("三天之内修复", WED, "2026-05-06", "2026-05-09", "range", "relative", "三天之内"),
]  # fmt: skip


@pytest.mark.parametrize(("expression", "mentioned", "start", "end", "precision", "basis", "original"), CASES)
def test_resolve_table(expression, mentioned, start, end, precision, basis, original):
    r = resolve(expression, mentioned)
    zone = mentioned.tzinfo
    assert (r.start, r.end) == (_at(start, zone), _at(end, zone))
    assert (r.precision, r.basis, r.original) == (precision, basis, original)
    assert r.span is not None and expression[r.span[0] : r.span[1]] == original
    if precision not in ("instant", "range"):
        assert r.start.time() == time(0) and r.start.tzinfo is zone


VAGUE = [
    "soon", "someday", "some day", "later", "eventually", "sometime", "recently", "a while ago", "the other day",
    "one day", "in the future", "in a few days", "a couple of weeks ago", "a few months from now", "before long",
    "every Friday", "on Fridays", "each month", "in an hour", "deleted 2026 rows", "you may 2 go", "June",
    "一会儿", "以后", "将来", "最近", "改天", "回头", "过几天", "过两天", "不久", "前几天", "几天后", "十几天后",
    "几十天后", "两三天后", "三五天后", "近期", "过阵子", "每周五", "每周末", "两周一次", "这周期", "以前天气很好",
    "然后年底再说", "2026年前", "两月", "by may", "you may end up", "within a few days", "",
]  # fmt: skip


@pytest.mark.parametrize("expression", VAGUE)
def test_vague_or_unknown_is_never_guessed(expression):
    r = resolve(expression, WED)
    assert (r.start, r.end, r.precision, r.basis, r.span) == (None, None, "unknown", "unknown", None)
    assert r.original == (expression or None)
    assert not r.resolved


@pytest.mark.parametrize("expression", [None, "   ", "2027-02-29", "February 30, 2026", "2月30日", "13月"])
def test_blank_and_impossible_dates_are_unknown(expression):
    r = resolve(expression, WED)
    assert r.precision == "unknown" and r.start is None and r.end is None


def test_month_day_without_year_needing_a_leap_year_is_unknown_in_a_common_year():
    assert resolve("2月29日", WED).precision == "unknown"
    assert resolve("Feb 29", datetime(2027, 6, 1, tzinfo=UTC)).precision == "unknown"
    assert resolve("Feb 29", datetime(2028, 6, 1, tzinfo=UTC)).start == datetime(2028, 2, 29, tzinfo=UTC)


# --- timezones ----------------------------------------------------------------------------------------------------

# 2026-05-10 20:00 UTC is Sunday evening in UTC but already Monday 04:00 in +08:00.
INSTANT = datetime(2026, 5, 10, 20, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "utc_start", "cst_start"),
    [
        ("today", "2026-05-10", "2026-05-11"),
        ("tomorrow", "2026-05-11", "2026-05-12"),
        ("this week", "2026-05-04", "2026-05-11"),
        ("next week", "2026-05-11", "2026-05-18"),
        ("周五", "2026-05-08", "2026-05-15"),
    ],
)
def test_same_instant_in_utc_and_plus_eight_falls_on_different_days(expression, utc_start, cst_start):
    in_utc = resolve(expression, INSTANT)
    in_cst = resolve(expression, INSTANT.astimezone(CST))
    assert in_utc.start == _at(utc_start, UTC)
    assert in_cst.start == _at(cst_start, CST)
    assert in_utc.start != in_cst.start  # different windows, compared as instants
    assert in_cst.start.utcoffset() == timedelta(hours=8)


def test_tz_argument_overrides_the_mention_timezone():
    r = resolve("today", INSTANT, tz=CST)
    assert r.start == datetime(2026, 5, 11, tzinfo=CST) and r.start.tzinfo is CST
    assert resolve("today", INSTANT.astimezone(CST), tz=UTC).start == datetime(2026, 5, 10, tzinfo=UTC)


def test_month_and_year_windows_follow_the_mention_timezone():
    new_year = datetime(2026, 12, 31, 18, 0, tzinfo=UTC)  # already 2027 in +08:00
    assert resolve("this year", new_year).start == datetime(2026, 1, 1, tzinfo=UTC)
    assert resolve("this year", new_year, tz=CST).start == datetime(2027, 1, 1, tzinfo=CST)
    assert resolve("this month", new_year, tz=CST).start == datetime(2027, 1, 1, tzinfo=CST)


def test_explicit_offset_in_an_iso_datetime_is_kept():
    r = resolve("2026-05-11T09:30:00+08:00", datetime(2026, 5, 6, tzinfo=UTC))
    assert r.start == datetime(2026, 5, 11, 1, 30, tzinfo=UTC)
    assert r.start.utcoffset() == timedelta(hours=8)


class ToyEastern(tzinfo):
    """UTC-5, UTC-4 from 2026-03-08 02:00 local (a DST switch), enough to check wall-clock midnights."""

    def utcoffset(self, dt: datetime | None) -> timedelta:
        assert dt is not None
        return timedelta(hours=-4) if dt.replace(tzinfo=None) >= datetime(2026, 3, 8, 2) else timedelta(hours=-5)

    def dst(self, dt: datetime | None) -> timedelta:
        return self.utcoffset(dt) + timedelta(hours=5)

    def tzname(self, dt: datetime | None) -> str:
        return "TOY"


def test_windows_are_wall_clock_midnights_across_a_dst_change():
    zone = ToyEastern()
    r = resolve("this week", datetime(2026, 3, 5, 12, 0, tzinfo=zone))
    assert (r.start, r.end) == (datetime(2026, 3, 2, tzinfo=zone), datetime(2026, 3, 9, tzinfo=zone))
    assert r.start.utcoffset() == timedelta(hours=-5) and r.end.utcoffset() == timedelta(hours=-4)
    assert r.end.astimezone(UTC) - r.start.astimezone(UTC) == timedelta(days=7, hours=-1)


def test_naive_mention_time_is_rejected():
    with pytest.raises(ValueError, match="timezone-aware"):
        resolve("today", datetime(2026, 5, 6, 10, 0))


# --- status and the temporal record --------------------------------------------------------------------------------


def test_future_window_downgrades_occurred_to_planned():
    r = resolve("next week", WED)
    assert status_for(r, WED, "occurred") == "planned"
    for stated in ("planned", "ongoing", "cancelled", "unknown"):
        assert status_for(r, WED, stated) == stated


def test_past_window_keeps_the_models_word_and_a_plan_is_never_upgraded():
    r = resolve("last week", WED)
    for stated in ("planned", "occurred", "ongoing", "cancelled", "unknown"):
        assert status_for(r, WED, stated) == stated


def test_window_containing_the_mention_and_unknown_windows_keep_the_models_word():
    assert status_for(resolve("today", WED), WED, "occurred") == "occurred"
    assert status_for(resolve("this week", WED), WED, "occurred") == "occurred"
    assert status_for(resolve("soon", WED), WED, "occurred") == "occurred"


def test_status_compares_instants_not_strings():
    # In text "2026-05-06T23:00:00-05:00" sorts before "2026-05-07T09:00:00+08:00", but it is 2026-05-07T04:00Z,
    # i.e. after the mention (2026-05-07T01:00Z): the window is in the future.
    mentioned = datetime(2026, 5, 7, 9, 0, tzinfo=CST)
    r = resolve("2026-05-06T23:00:00-05:00", mentioned)
    assert r.start is not None and r.start > mentioned
    assert status_for(r, mentioned, "occurred") == "planned"
    earlier = resolve("2026-05-07T08:00:00+08:00", mentioned)
    assert status_for(earlier, mentioned, "occurred") == "occurred"


def test_build_temporal_fills_mention_time_window_and_status():
    t = build_temporal("Finish the prototype next week", WED, "occurred")
    assert t.mentioned_at == WED
    assert (t.happened_start, t.happened_end) == (datetime(2026, 5, 11, tzinfo=CST), datetime(2026, 5, 18, tzinfo=CST))
    assert (t.original, t.precision, t.basis, t.status) == ("next week", "week", "relative", "planned")
    vague = build_temporal("someday", WED, "planned")
    assert (vague.happened_start, vague.happened_end, vague.precision, vague.basis, vague.status) == (
        None, None, "unknown", "unknown", "planned",
    )  # fmt: skip
    assert vague.original == "someday"


def test_temporal_serialises_iso_8601_with_offset_and_round_trips():
    t = build_temporal("下周五", WED, "planned")
    data = json.loads(t.model_dump_json())
    assert data["mentioned_at"] == "2026-05-06T10:00:00+08:00"
    assert data["happened_start"] == "2026-05-15T00:00:00+08:00"
    assert data["happened_end"] == "2026-05-16T00:00:00+08:00"
    utc = build_temporal("today", datetime(2026, 5, 6, 10, tzinfo=UTC))
    assert json.loads(utc.model_dump_json())["happened_start"] == "2026-05-06T00:00:00+00:00"
    assert Temporal.model_validate_json(t.model_dump_json()) == t
    assert Resolution.model_validate_json(resolve("next week", WED).model_dump_json()) == resolve("next week", WED)


def test_temporal_validation():
    with pytest.raises(ValidationError):
        Temporal(mentioned_at=datetime(2026, 5, 6, 10, 0))  # naive
    with pytest.raises(ValidationError):
        Temporal(mentioned_at=WED, happened_start=datetime(2026, 5, 6, 10, 0), happened_end=WED)  # naive
    with pytest.raises(ValidationError, match="happened_start"):
        Temporal(mentioned_at=WED, happened_start=WED + timedelta(days=1), happened_end=WED)
    with pytest.raises(ValidationError):
        Temporal(mentioned_at=WED, status="done")
    # Ordering is on instants: 09:00+08:00 is before 02:00Z.
    ok = Temporal(mentioned_at=WED, happened_start=datetime(2026, 5, 6, 9, tzinfo=CST),
                  happened_end=datetime(2026, 5, 6, 2, tzinfo=UTC))  # fmt: skip
    assert ok.precision == "unknown" and ok.basis == "unknown" and ok.status == "unknown"
    instant = Temporal(mentioned_at=WED, happened_start=WED, happened_end=WED, precision="instant")
    assert instant.happened_start == instant.happened_end


def test_resolution_rejects_inconsistent_windows():
    with pytest.raises(ValidationError):
        Resolution(start=WED, end=WED, precision="instant")
    with pytest.raises(ValidationError):
        Resolution(start=WED, end=None, precision="day")
    with pytest.raises(ValidationError):
        Resolution(start=WED, end=WED + timedelta(days=1), precision="unknown")


# --- properties ---------------------------------------------------------------------------------------------------

offsets = st.builds(lambda minutes: timezone(timedelta(minutes=minutes)), st.integers(-14 * 60, 14 * 60))
mentions = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2199, 12, 31), timezones=offsets)
EN_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
FILLERS = ["", "we will do it ", "Decision: ship ", "(", "我们"]


def cn_numeral(n: int) -> str:
    """1..999 in Chinese numerals, written independently of the module under test."""
    digits = "零一二三四五六七八九"
    hundreds, rest = divmod(n, 100)
    tens, ones = divmod(rest, 10)
    out = digits[hundreds] + "百" if hundreds else ""
    if tens:
        out += ("" if tens == 1 and not hundreds else digits[tens]) + "十"
    elif hundreds and ones:
        out += "零"
    return out + (digits[ones] if ones else "")


def en_count(n: int, style: int) -> str:
    if style == 1 and n <= 12:
        return EN_WORDS[n]
    if style == 2 and n == 1:
        return "a"
    return str(n)


def cn_count(n: int, style: int) -> str:
    if style == 0 or n > 999:
        return str(n)
    return "两" if n == 2 and style == 2 else cn_numeral(n)


UNIT_CN = {"day": "天", "week": "周", "month": "个月", "year": "年"}
ZERO = {"day": ("today", "今天"), "week": ("this week", "本周"), "month": ("this month", "本月"),
        "year": ("this year", "今年")}  # fmt: skip
ONE = {  # (next, 下, last, 上)
    "day": ("tomorrow", "明天", "yesterday", "昨天"),
    "week": ("next week", "下周", "last week", "上周"),
    "month": ("next month", "下个月", "last month", "上个月"),
    "year": ("next year", "明年", "last year", "去年"),
}
RANGES = {"day": 3000, "week": 500, "month": 600, "year": 100}


def phrase(unit: str, n: int, lang: int, style: int) -> str:
    if n == 0:
        return ZERO[unit][lang % 2]
    if abs(n) == 1 and lang >= 2:
        words = ONE[unit]
        return words[(lang % 2) + (0 if n > 0 else 2)]
    k = abs(n)
    if lang % 2 == 0:
        count, plural = en_count(k, style), "s" if k != 1 else ""
        return f"in {count} {unit}{plural}" if n > 0 else f"{count} {unit}{plural} ago"
    return f"{cn_count(k, style)}{UNIT_CN[unit]}{'后' if n > 0 else '前'}"


def expected_window(unit: str, n: int, today: date) -> tuple[date, date]:
    if unit == "day":
        day = today + timedelta(days=n)
        return day, day + timedelta(days=1)
    if unit == "week":
        year, week, _ = today.isocalendar()
        monday = date.fromisocalendar(year, week, 1) + timedelta(weeks=n)
        return monday, monday + timedelta(weeks=1)
    if unit == "month":
        index = today.year * 12 + today.month - 1 + n
        first = date(index // 12, index % 12 + 1, 1)
        return first, first + timedelta(days=calendar.monthrange(first.year, first.month)[1])
    first = date(today.year + n, 1, 1)
    return first, first + timedelta(days=366 if calendar.isleap(first.year) else 365)


@st.composite
def unit_offsets(draw):
    unit = draw(st.sampled_from(list(RANGES)))
    n = draw(st.integers(-RANGES[unit], RANGES[unit]))
    return unit, n


@given(mentions, unit_offsets(), st.integers(0, 3), st.integers(0, 2), st.sampled_from(FILLERS))
def test_relative_offsets_give_exactly_one_calendar_unit(mentioned, unit_n, lang, style, filler):
    unit, n = unit_n
    text = phrase(unit, n, lang, style)
    r = resolve(filler + text, mentioned)
    assert r.original == text and r.precision == unit and r.basis == "relative"
    start_day, end_day = expected_window(unit, n, mentioned.date())
    zone = mentioned.tzinfo
    assert r.start == datetime.combine(start_day, time(0), tzinfo=zone) and r.start.tzinfo is zone
    assert r.end == datetime.combine(end_day, time(0), tzinfo=zone)
    assert r.start < r.end
    length = r.end - r.start
    if unit == "day":
        assert length == timedelta(days=1)
    elif unit == "week":
        assert r.start.weekday() == 0 and length == timedelta(days=7)
    elif unit == "month":
        assert r.start.day == 1 and length.days == calendar.monthrange(r.start.year, r.start.month)[1]
    else:
        assert (r.start.month, r.start.day) == (1, 1) and length.days == (366 if calendar.isleap(r.start.year) else 365)
    if n == 0:
        assert r.start <= mentioned < r.end


@given(mentions, st.integers(1, 2000), st.booleans())
def test_days_ago_and_in_days_are_symmetric_around_the_mention_day(mentioned, n, chinese):
    later = resolve(f"{n}天后" if chinese else f"in {n} days", mentioned)
    earlier = resolve(f"{n}天前" if chinese else f"{n} days ago", mentioned)
    today = resolve("今天" if chinese else "today", mentioned)
    assert later.start - today.start == today.start - earlier.start == timedelta(days=n)
    assert later.end - later.start == earlier.end - earlier.start == timedelta(days=1)


@given(mentions, st.sampled_from([c[0] for c in CASES if "29" not in c[0]]), st.one_of(st.none(), offsets))
def test_windows_never_have_start_at_or_after_end(mentioned, expression, tz):
    r = resolve(expression, mentioned, tz=tz)
    assert r.resolved
    assert r.start < r.end
    if r.precision not in ("instant",):
        local = mentioned.astimezone(tz) if tz else mentioned
        assert r.start.tzinfo is local.tzinfo and r.start.time() == time(0)


@given(mentions, st.sampled_from([v for v in VAGUE if v]), st.sampled_from(FILLERS), st.sampled_from(["", ".", "!"]))
def test_unknown_phrases_never_produce_a_window(mentioned, vague, filler, tail):
    r = resolve(filler + vague + tail, mentioned)
    assert (r.start, r.end, r.precision, r.basis) == (None, None, "unknown", "unknown")
    assert status_for(r, mentioned, "occurred") == "occurred"


@given(mentions, unit_offsets(), st.sampled_from(["planned", "occurred", "ongoing", "cancelled", "unknown"]))
def test_status_never_claims_a_future_window_occurred_and_never_upgrades(mentioned, unit_n, stated):
    unit, n = unit_n
    r = resolve(phrase(unit, n, 0, 0), mentioned)
    status = status_for(r, mentioned, stated)
    if r.start > mentioned:
        assert status != "occurred"
    assert status == ("planned" if stated == "occurred" and r.start > mentioned else stated)


@given(st.integers(1, 999))
def test_cn_numeral_helper_round_trips_through_resolve(n):
    mentioned = datetime(2026, 5, 6, tzinfo=UTC)
    assert resolve(f"{cn_numeral(n)}天后", mentioned).start == datetime(2026, 5, 6, tzinfo=UTC) + timedelta(days=n)
