"""Is a value after a secret-ish name code rather than a credential?

``token = current_place.set(place)``, ``pwd=pwd``, ``self.user, self.password = user, password``,
``authorization = self.headers.get("authorization")`` and ``for token, token_id in`` name secrets but hold none: the
value is a call, a subscript, an attribute access, a keyword or another name. The secret detector asks this module
before replacing an unquoted value, so restored code is the code that was captured. detect-secrets' own heuristic
filters decide first (indirect references, templated values, values without a letter, UUIDs, sequences); the rules
here cover the rest of what code looks like. Every pattern is linear (no nested quantifiers).
"""

from __future__ import annotations

import re

# Words that end an assignment in code and are never a credential on their own.
_CODE_WORDS = frozenset(
    """none true false null nil undefined nan self this cls super new await async yield lambda function return
    not and or in is if else elif def class import from let const var typeof void delete instanceof static raise
    pass continue break try except finally with for while throw""".split()
)
_NAME = re.compile(r"[A-Za-z_$][\w$]*")
# One part of a name as code spells it: letters and underscores, at most a digit or two at the end.
_WORDISH = re.compile(r"_*[A-Za-z][A-Za-z_]*[0-9]{0,2}")
_KEYWORDISH = re.compile(r"(?i)pass|pwd|token|key|secret|auth|cred|pin|sess|cookie")
# An indirect reference's head: a name, then a call or subscript opening (as detect-secrets' filter reads it).
_REFERENCE_HEAD = re.compile(r"[\w.$?-]+[\[(]")
_DOTTED_HEAD = re.compile(r"[\w.$]+")
# A grammar's repetition ("token = 1*tchar", ABNF) rather than a value.
_GRAMMAR = re.compile(r"[0-9]*\*[A-Za-z<(\[]")
# What follows a name that goes on as an expression ("passwd or ''", "password + b'\\x00'", "token if x else y").
_EXPRESSION_TAIL = re.compile(r"[ \t]*(?:[+*/%|&^]|-(?!\w)|\?\?|\b(?:or|and|if|else|is|in|not)\b)")


def is_placeholder_value(value: str) -> bool:
    """A quoted value that is a template (``{0}:{1}``, ``<password>``, ``${TOKEN}``) or has no letter and is not a
    number (an OID ``1.3.6.1.5.5.7.3.1``, ``*****``; a PIN is all digits)."""
    from detect_secrets.filters import heuristic as h

    return h.is_templated_secret(value) or (h.is_not_alphanumeric_string(value) and not value.isdigit())


def _ds_filtered(value: str, rest: str) -> bool:
    """detect-secrets' heuristic filters: does any say this value is no secret?"""
    from detect_secrets.filters import heuristic as h

    return (
        is_placeholder_value(value)
        or (len(value) >= 8 and h.is_sequential_string(value))
        or h.is_potential_uuid(value)
        or (_REFERENCE_HEAD.match(rest) is not None and h.is_indirect_reference("x = " + rest))
    )


def _name_like(value: str) -> bool:
    """A name as code spells it: a.b.c of word-like parts, or one part joined by underscores."""
    parts = value.split(".")
    if any(not p or _WORDISH.fullmatch(p) is None for p in parts):
        return False
    return len(parts) > 1 or "_" in value.strip("_") or value.startswith("_")


def is_code_value(text: str, start: int, end: int, code_context: bool = False) -> bool:
    """Is the unquoted value ``text[start:end]`` code (a call, subscript, attribute, keyword or name)?

    ``code_context`` says the key itself is written as code (``self.password``, a tuple ``a, token =`` or a keyword
    argument ``f(authkey=...)``): there every bare name is a reference, not a literal."""
    value = text[start:end].rstrip(")];:,")  # the closing brackets of a call the assignment sits in
    if not value or value[0] in "([{" or _GRAMMAR.match(value):
        return True  # a tuple, list or dict literal; a grammar rule
    line_end = text.find("\n", start)
    rest = text[start:(line_end if line_end >= 0 else len(text))][:300]
    if _ds_filtered(value, rest):
        return True
    head = _NAME.match(value)
    if head is None:
        return False
    dotted = _DOTTED_HEAD.match(value)
    if dotted is not None and dotted.end() < len(value) and value[dotted.end()] in "([" and (
            _name_like(dotted.group(0)) or dotted.group(0).isidentifier()):
        return True  # getpass.getpass("Password: ..."): a call the value pattern cut at its quote
    if head.end() < len(value) and value[head.end()] in "([":
        return True  # a call or subscript whose closing bracket the value pattern cut off
    following = text[end:end + 1]
    if re.match(r"[ \t]*=(?!=)", text[end:end + 8]):
        return True  # a chained assignment: "userid = passwd = acct = ''" names, it does not state
    if head.end() == len(value) and following in ("(", "["):
        return True
    if value.lower() in _CODE_WORDS:
        return True
    if head.end() != len(value) and not _name_like(value):
        return False
    if _name_like(value):
        return True
    # A single bare word: a variable named like the key ("pwd = passwd"), or one an expression goes on from.
    if value.isidentifier() and not any(c.isdigit() for c in value):
        if _KEYWORDISH.search(value) or code_context:
            return True
        return _EXPRESSION_TAIL.match(text, end) is not None and "\n" not in text[end:end + 4]
    return False


def key_in_code(text: str, name_start: int, name: str) -> bool:
    """Is the key name written as code: an attribute (``self.token``), part of a tuple or an argument list?"""
    before = text[max(0, name_start - 2):name_start]
    if "." in name.strip(".") or before.endswith(".") or before == "->":
        return True
    i = name_start - 1
    while i >= 0 and text[i] in " \t":
        i -= 1
    return i >= 0 and text[i] in ",("
