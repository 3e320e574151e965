"""The rendering rule's tables made cheap (safety/inert.py): the stored table of removed code points is the one
this Python's Unicode database gives, and the lookalike replacement is the old one-table translation."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from stratagate.safety import inert as I


def test_the_removed_characters_are_those_the_unicode_database_gives():
    assert I._invisible().pattern == f"[{I._char_class(I.removed_ranges())}]"


def test_the_stored_table_is_the_computed_one_under_its_unicode_version():
    computed = I.removed_ranges()
    # The stored table is made from Unicode 14.0.0; under it both agree range for range (the check above holds
    # under any version, where the stored table is not used).
    assert (tuple(computed) == I.REMOVED_RANGES) or I.unicodedata.unidata_version != I.REMOVED_RANGES_UNICODE
    assert all(a <= b for a, b in I.REMOVED_RANGES)
    assert (0x200B, 0x200F) in I.REMOVED_RANGES and (0xE0020, 0xE007F) in I.REMOVED_RANGES


OLD_LOOKALIKES = str.maketrans(dict(I._LOOKALIKES))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([*"<>a &|\n\uff1c\uff1e\ufe64\ufe65\u2329\u232a\uff5c", "&lt;", "中"]), max_size=40)
       .map("".join))
def test_lookalikes_are_replaced_as_the_one_table_translation_did(text: str):
    out = text
    for lookalike, entity in I._LOOKALIKES:
        out = out.replace(lookalike, entity)
    assert out == text.translate(OLD_LOOKALIKES)
    assert not set(I.inert(text)) & {"<", ">", *"\uff1c\uff1e\ufe64\ufe65\u2329\u232a\uff5c"}
