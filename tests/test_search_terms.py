"""The shared tokenizer (text/terms.py) and date normalisation (text/dates.py)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratagate.search.raw import plan
from stratagate.text.dates import date_tokens, find_dates, find_months
from stratagate.text.terms import fts_document, fts_query, terms

SAME_DAY = [
    "2023-05-08",
    "2023/05/08",
    "8 May 2023",
    "8 May, 2023",
    "8th of May 2023",
    "May 8, 2023",
    "May 8th 2023",
    "may 8 2023",
    "2023年5月8日",
    "on 2023-05-08T10:30:00Z",
]


@pytest.mark.parametrize("text", SAME_DAY)
def test_every_spelling_of_a_day_gives_the_same_tokens(text: str):
    assert [t for t in terms(text) if t[0] in "ymd" and t[1:].isdigit()] == ["y2023", "m202305", "d20230508"]


@pytest.mark.parametrize("text", ["May 2023", "May, 2023", "may of 2023", "2023-05", "2023年5月"])
def test_a_month_matches_every_day_in_it(text: str):
    assert set(terms(text)) == {"y2023", "m202305"}
    assert set(terms(text)) <= set(terms("we shipped it on 2023-05-08"))


def test_years_ranges_and_non_dates():
    assert terms("in 2023") == ["y2023"]
    assert terms("2023-2024") == ["y2023", "y2024"]
    assert terms("version 2.2023") == ["version", "2", "2023"]  # not a year
    assert terms("31 Feb 2023") == ["y2023", "m202302"]  # no such day: the month still counts
    assert terms("2023-13-01") == ["y2023"]
    assert [s.tokens for s in find_dates("05/08/2023")] == [["y2023"]]  # day/month order is ambiguous: year only
    assert date_tokens(datetime(2023, 5, 8, tzinfo=UTC)) == ["y2023", "m202305", "d20230508"]


def test_a_dates_window():
    (span,) = find_dates("May 2023")
    start, end = span.window()
    assert start == datetime(2023, 5, 1, tzinfo=UTC) and end == datetime(2023, 6, 1, tzinfo=UTC)
    (day,) = find_dates("2023-12-31")
    assert day.window()[1] == datetime(2024, 1, 1, tzinfo=UTC)


def test_months_without_a_year():
    assert find_months("When did Melanie go camping in June?") == [6]
    assert find_months("What happened in May?") == [5]
    assert find_months("May I ask something?") == []  # "May" needs a preposition
    assert find_months("June was great") == []  # the first word of a sentence is not trusted
    assert find_months("in May 2023 and then July") == [7]  # a dated mention is not a bare month


def test_stemming_possessives_and_stopwords():
    assert terms("painting painted paints") == ["paint", "paint", "paint"]
    assert terms("Caroline's researching agencies") == terms("caroline research agency")
    assert terms("I don't think it's what they're doing") == ["think"]
    assert terms("the and of") == []


def test_cjk_bigrams_and_mixed_runs():
    assert terms("DSH插件的配置") == ["dsh", "插件", "件的", "的配", "配置"]
    assert terms("我") == []  # a lone stopword
    assert terms("猫") == ["猫"]


def test_query_words_get_weights():
    q = plan("What kind of painting did Caroline make in May 2023?")
    assert q.terms["paint"] == 1.0 and q.terms["carolin"] == 1.0
    assert q.terms["kind"] < 1.0 and q.terms["make"] < 1.0  # question filler counts less
    assert {"y2023", "m202305"} <= set(q.terms)
    assert q.windows == [("2023-05-01T00:00:00.000Z", "2023-06-01T00:00:00.000Z")]


def test_fts_query_quotes_terms():
    assert fts_query("the and of") is None
    assert fts_query('say "hi" there') == '"say" OR "hi"'
    assert fts_query("paint paints") == '"paint"'


_fts = sqlite3.connect(":memory:")
_fts.execute("CREATE VIRTUAL TABLE t USING fts5(terms, tokenize = 'unicode61 remove_diacritics 0')")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_terms_never_fail_and_a_text_always_finds_itself(text: str):
    doc = fts_document(text)
    assert all(t and " " not in t for t in terms(text))
    assert terms(text) == terms(text)  # deterministic
    match = fts_query(text)
    if match is None:
        return
    _fts.execute("DELETE FROM t")
    _fts.execute("INSERT INTO t(rowid, terms) VALUES (1, ?)", (doc,))
    assert _fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,)).fetchall() == [(1,)]


@settings(max_examples=200, deadline=None)
@given(
    st.dates(min_value=datetime(1900, 1, 1).date(), max_value=datetime(2099, 12, 31).date()),
    st.sampled_from(
        ["{y}-{m:02d}-{d:02d}", "{d} {mon} {y}", "{mon} {d}, {y}", "{y}年{m}月{d}日", "{d}th of {mon}, {y}"]
    ),
    st.text(alphabet="abc xyz.,", max_size=12),
)
def test_date_variants_produce_the_same_tokens(day, template: str, noise: str):
    mon = day.strftime("%B")
    text = noise + " " + template.format(y=day.year, m=day.month, d=day.day, mon=mon) + " " + noise
    expected = [f"y{day.year}", f"m{day.year}{day.month:02d}", f"d{day.year}{day.month:02d}{day.day:02d}"]
    assert [t for t in terms(text) if t in expected] == expected
    month_query = f"{mon} {day.year}"
    assert set(terms(month_query)) <= set(terms(text))
