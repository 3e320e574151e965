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
from itertools import pairwise

# Words that end an assignment in code and are never a credential on their own.
_CODE_WORDS = frozenset(
    """none true false null nil undefined nan self this cls super new await async yield lambda function return
    not and or in is if else elif def class import from let const var typeof void delete instanceof static raise
    pass continue break try except finally with for while throw""".split()
)
_NAME = re.compile(r"[A-Za-z_$][\w$]*")
_KEYWORDISH = re.compile(r"(?i)pass|pwd|token|key|secret|auth|cred|pin|sess|cookie")
# A call's or subscript's head: a name, dotted or not.
_DOTTED_HEAD = re.compile(r"[\w.$?]+")
_DOTTED_HEAD = re.compile(r"[\w.$?]+")
# A name or number glued to code punctuation: "e,signed:t})", "n;return", "!0,search:!0" (minified JS).
_MINIFIED = re.compile(r"(?:!+[\w$]|[A-Za-z_$])[\w$.]*(?:[,;{}][A-Za-z]|\)[A-Za-z]|=[A-Za-z_])")
_DIGIT_RUN = re.compile(r"[0-9]{3}")
_CHAINED = re.compile(r"[ \t]*=(?!=)[ \t]*[A-Za-z_'\"]")
# A grammar's repetition ("token = 1*tchar", ABNF) rather than a value.
_GRAMMAR = re.compile(r"[0-9]?\*[A-Za-z<(\[]")
# What follows a name that goes on as an expression ("passwd or ''", "password + b'\\x00'", "token if x else y").
_OPERATOR_TAIL = re.compile(r"[ \t]*(?:\?\?|\|\||&&)[ \t]*[A-Za-z_$(!]|[ \t]+[+*/%|&^-][ \t=]")
_WORD_OPERATOR_TAIL = re.compile(r"[ \t]+(?:or|and|if|else|is|in|not)\b")


def is_placeholder_value(value: str) -> bool:
    """A value that is a template (``{0}:{1}``, ``<password>``, ``${TOKEN}``) or has no letter and no
    run of digits (an OID ``1.3.6.1.5.5.7.3.1``, ``*****``; a PIN is digits)."""
    from detect_secrets.filters import heuristic as h

    no_letter = h.is_not_alphanumeric_string(value) and _DIGIT_RUN.search(value) is None
    return h.is_templated_secret(value) or no_letter


def _ds_filtered(value: str, rest: str) -> bool:
    """detect-secrets' heuristic filters: does any say this value is no secret?"""
    from detect_secrets.filters import heuristic as h

    return (
        is_placeholder_value(value)
        or h.is_prefixed_with_dollar_sign(value)
        or (len(value) >= 8 and h.is_sequential_string(value))
        or h.is_potential_uuid(value)
    )


def _call_or_subscript(text: str, start: int, rest: str) -> bool:
    """``getpass.getpass("Password: ")``, ``line[start:end]``, ``Token(typeid, ...)``, also a call the value pattern
    cut at a quote or one whose arguments go on over lines. The argument must start like code (a name, a number;
    ``()``, ``[:``, ``['key']``; a quote or brace in a call only after a dotted, snake_case, camelCase or PascalCase
    name), so "hunter2[)" stays a password."""
    from detect_secrets.filters import heuristic as h

    head = _DOTTED_HEAD.match(rest)
    if head is None or head.end() >= len(rest) or rest[head.end()] not in "([":
        return False
    name, arg = head.group(0), rest[head.end() + 1:head.end() + 2]
    if not (_name_like(name) or (name.isidentifier() and _word_part(name))):
        return False
    opener = rest[head.end()]
    after_call = rest[head.end() + 2:head.end() + 3]
    empty_call = opener + arg == "()" and after_call in ("", ".", ",", ";", ")", " ", "\t", "\r")
    code_arg = (arg.isascii() and arg.isalnum()) or empty_call or (opener + arg) in ("[:", "[-", "['", '["')
    cased = _name_like(name) or any(a.islower() and b.isupper() for a, b in pairwise(name)) or (
        name[:1].isupper() and name[1:2].islower())
    if not code_arg and not (cased and arg in ("\"", "'", "`", "$", "]", "{")):
        return False
    closer = "]" if opener == "[" else ")"  # on this line or a following one: f(\n  a,\n)
    return h.is_indirect_reference("x = " + rest) or closer in text[start + head.end():start + 600]


def _word_part(part: str) -> bool:
    """One part of a name as code spells it (snake_case, CONSTANT_CASE, camelCase, SOCKS5_AUTH), not a random run:
    an identifier with at most two digits and few lower-to-upper case changes."""
    if not part.isascii() or not part.isidentifier() or sum(c.isdigit() for c in part) > 2 or part.strip("_") == "":
        return False
    return sum(a.islower() and b.isupper() for a, b in pairwise(part)) <= 3


def _name_like(value: str) -> bool:
    """A name as code spells it: a.b.c (or a?.b) of word-like parts, or one part joined by underscores."""
    parts = value.replace("?.", ".").split(".")
    if any(not _word_part(p) for p in parts):
        return False
    return len(parts) > 1 or "_" in value.strip("_") or value.startswith("_")


def is_code_value(text: str, start: int, end: int, code_context: bool = False) -> bool:
    """Is the unquoted value ``text[start:end]`` code (a call, subscript, attribute, keyword or name)?

    ``code_context`` says the key itself is written as code (``self.password``, a tuple ``a, token =`` or a keyword
    argument ``f(authkey=...)``): there every bare name is a reference, not a literal."""
    value = text[start:end]
    if value.endswith(("\\n", "\\r")):  # code quoted inside a string: its line breaks are escapes
        value = value[:-2]
    value = value.rstrip(")];:,")  # the closing brackets of a call the assignment sits in
    head = _NAME.match(value)
    if head is not None and not head.group(0).startswith("$") and not _word_part(head.group(0)):
        return False  # a random run ("tlxm87vSRwUCZvxEslBF1WruUxF5p8IJ[)") is a value whatever follows it
    if not value or value[0] in "([{=" or _GRAMMAR.match(value) or _MINIFIED.match(value):
        return True  # a tuple, list or dict literal; a comparison; a grammar rule; minified code
    line_end = text.find("\n", start, start + 300)  # bounded: a long line is never scanned or copied whole
    rest = text[start:line_end if line_end >= 0 else start + 300]
    if _ds_filtered(value, rest):
        return True
    if head is None:
        return False
    if head.group(0).lower() in _CODE_WORDS and head.end() < len(value) and not value[head.end()].isalnum():
        return True  # "null:e.skipToEnd()", "this.x"
    if _call_or_subscript(text, start, rest):
        return True
    if (value.isidentifier() or _name_like(value)) and _CHAINED.match(text, end):
        return True  # a chained assignment: "userid = passwd = acct = ''" names, it does not state
    if value.lower() in _CODE_WORDS:
        return True
    if head.end() != len(value) and not _name_like(value):
        return False
    if _name_like(value):
        return True
    # A single bare word: a variable named like the key ("pwd = passwd"), or one an expression goes on from.
    if not value.isidentifier():
        return False
    if _OPERATOR_TAIL.match(text, end) is not None:
        return True  # "token = error51 ?? this.stack.pop()"
    if any(c.isdigit() for c in value):
        return False
    if _KEYWORDISH.search(value) or code_context or _WORD_OPERATOR_TAIL.match(text, end) is not None:
        return True
    # camelCase before code punctuation: "privateKey: tString," in a schema
    camel = any(a.islower() and b.isupper() for a, b in pairwise(value))
    return camel and text[end:end + 1] in (",", ";", ")", "}")


def key_in_code(text: str, name_start: int, name: str) -> bool:
    """Is the key name written as code: an attribute (``self.token``), part of a tuple or an argument list?"""
    before = text[max(0, name_start - 2):name_start]
    if "." in name.strip(".") or before.endswith(".") or before == "->":
        return True
    i = name_start - 1
    while i >= 0 and text[i] in " \t":
        i -= 1
    return i >= 0 and text[i] in ",({"
