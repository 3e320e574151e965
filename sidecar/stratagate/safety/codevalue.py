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
from types import ModuleType

from stratagate.safety import ds_import

# Words that end an assignment in code and are never a credential on their own.
_CODE_WORDS = frozenset(
    """none true false null nil undefined nan self this cls super new await async yield lambda function return
    not and or in is if else elif def class import from let const var typeof void delete instanceof static raise
    pass continue break try except finally with for while throw readonly unique keyof declare mut""".split()
)
_NAME = re.compile(r"[A-Za-z_$][\w$]*")
_KEYWORDISH = re.compile(r"(?i)pass|pwd|token|key|secret|auth|cred|pin|sess|cookie")
# A call's or subscript's head: a name, dotted or not (``a.b``, ``a?.b``, C's ``a->b``, Rust's ``a::b``).
_DOTTED_HEAD = re.compile(r"(?:[\w.$?]|->|::)+")
# A name as code writes it, split into humps: "commaDelimitedListToStringArray", "OAuth2Token", "HTTPServer".
_HUMP = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
# A name or number glued to code punctuation: "e,signed:t})", "n;return", "!0,search:!0" (minified JS).
_MINIFIED = re.compile(
    r"(?:!+[\w$]|[A-Za-z_$])[\w$.]*(?:[,;{}][A-Za-z]|\)[A-Za-z]|=[A-Za-z_]|[}\]]=[A-Za-z]|[}\])]+[;,]?[A-Za-z])"
)
_DIGIT_RUN = re.compile(r"[0-9]{3}")
_CHAINED = re.compile(r"[ \t]*=(?!=)[ \t]*[A-Za-z_'\"]")
# A grammar's repetition ("token = 1*tchar", ABNF) rather than a value.
_GRAMMAR = re.compile(r"[0-9]?\*[A-Za-z<(\[]")
# What follows a name that goes on as an expression ("passwd or ''", "password + b'\\x00'", "token if x else y").
_OPERATOR_TAIL = re.compile(
    r"[ \t]*(?:\?\?|\|\||&&)[ \t]*[A-Za-z_$(!]|[ \t]+[+*/%|&^-][ \t=]|[ \t]+\?(?:[ \t\r\n]|$)"
    r"|[ \t]+(?:[=!]==?|[<>]=?)[ \t]"
)
# Perl: a quote-like operator (qr/.../, qw(...)) or a reference (\&Name::sub, \$x)
_PERL = re.compile(r"q[qrw]?[/{(]|\\[&$@%][A-Za-z_]")
_WORD_OPERATOR_TAIL = re.compile(r"[ \t]+(?:or|and|if|else|is|in|not)\b")


# A printf or format directive standing for a value: "%s", "%.*s", "%(password)s", "{}", "{0}".
_FORMAT = re.compile(r"%(?:\([\w.]+\))?[-#+ 0-9.*]*[sdifxXuclpqrv]|\{[\w.:!]*\}")


def _heuristic() -> ModuleType:
    return ds_import.module("detect_secrets.filters.heuristic")


def is_placeholder_value(value: str) -> bool:
    """A value that is a template (``{0}:{1}``, ``<password>``, ``${TOKEN}``, ``%s``), one character repeated
    (``xxxxxxxx``, ``BBBBBBBBB``) or has no letter and no run of digits (an OID ``1.3.6.1.5.5.7.3.1``,
    ``*****``; a PIN is digits)."""
    h = _heuristic()

    no_letter = h.is_not_alphanumeric_string(value) and _DIGIT_RUN.search(value) is None
    repeated = len(value) >= 3 and len(set(value.lower())) == 1 and (not value.isdigit() or len(value) >= 8)
    return h.is_templated_secret(value) or no_letter or repeated or _FORMAT.fullmatch(value) is not None


def _ds_filtered(value: str, rest: str) -> bool:
    """detect-secrets' heuristic filters: does any say this value is no secret?"""
    h = _heuristic()

    return (
        is_placeholder_value(value)
        or h.is_prefixed_with_dollar_sign(value)
        or (len(value) >= 8 and h.is_sequential_string(value))
        or h.is_potential_uuid(value)
    )


def _call_or_subscript(text: str, start: int, rest: str) -> bool:
    """``getpass.getpass("Password: ")``, ``line[start:end]``, ``Token(typeid, ...)``, also a call the value pattern
    cut at a quote or one whose arguments go on over lines; a generic type (``Option<String>``,
    ``z.ZodOptional<z.ZodString>``) or a composite literal (``oauth2.Token{``). The argument must start like code
    (a name, a number; ``()``, ``[:``, ``['key']``; after a dotted, snake_case, camelCase or PascalCase name any
    argument, ``curlx_str(&out)``, or none before the line ends), so "hunter2[)" stays a password."""
    h = _heuristic()

    head = _DOTTED_HEAD.match(rest)
    if head is None or head.end() >= len(rest) or rest[head.end()] not in "([{<":
        return False
    name, arg = head.group(0).rstrip("?.:"), rest[head.end() + 1:head.end() + 2]
    if not name or not (_name_like(name) or (name.isidentifier() and _word_part(name))):
        return False
    opener = rest[head.end()]
    cased = not name[:1].isdigit() and (_name_like(name) or any(a.islower() and b.isupper() for a, b in pairwise(
        name)) or (name[:1].isupper() and name[1:2].islower()))
    if opener in "{<":  # a type or a literal of one: only after a name spelled as code, never after "hunter2"
        if not cased or not (arg.isalpha() or arg in "&'?[(" or (opener == "{" and arg in "}\r\n")):
            return False
        return opener == "{" or ">" in text[start + head.end():start + 600]
    after_call = rest[head.end() + 2:head.end() + 3]
    empty_call = opener + arg == "()" and after_call in ("", ".", ",", ";", ")", " ", "\t", "\r")
    code_arg = (arg.isascii() and arg.isalnum()) or empty_call or (opener + arg) in ("[:", "[-", "['", '["')
    if not code_arg and not cased:
        return False
    closer = "]" if opener == "[" else ")"  # on this line or a following one: f(\n  a,\n)
    return h.is_indirect_reference("x = " + rest) or closer in text[start + head.end():start + 600]


def _word_part(part: str) -> bool:
    """One part of a name as code spells it (snake_case, CONSTANT_CASE, camelCase, SOCKS5_AUTH), not a random run:
    an identifier with at most two digits and few lower-to-upper case changes."""
    part = part.replace("$", "")  # JS names may hold "$": z$1, Credentials$
    if not part.isascii() or not part.isidentifier() or part.strip("_") == "":
        return False
    digits = sum(c.isdigit() for c in part)
    if digits <= 2 and sum(a.islower() and b.isupper() for a, b in pairwise(part)) <= 3:
        return True
    return _word_humps(part)


def _word_humps(part: str) -> bool:
    """A long camelCase name ("getCredentialsWithoutSessionToken", "computeSHA256") is made of word-long humps
    that hold vowels, its digits in at most two runs; a random run's humps are a letter or two ("vSRwUCZvx")."""
    humps = _HUMP.findall(part)
    letters = [h for h in humps if h.isalpha()]
    if len(humps) < 2 or len(humps) - len(letters) > 2 or sum(map(len, humps)) / len(humps) < 3.0:
        return False
    if sum(len(h) == 1 for h in letters) > 1:
        return False
    long = [h for h in letters if len(h) >= 3]
    return 4 * sum(any(c in "aeiouyAEIOUY" for c in h) for h in long) >= 3 * len(long)


def _name_like(value: str) -> bool:
    """A name as code spells it: a.b.c (or a?.b) of word-like parts, or one part joined by underscores."""
    parts = value.replace("?.", ".").replace("->", ".").replace("::", ".").split(".")
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
    if value[:1] == "@" and value[1:].isidentifier() and not any(c.isdigit() for c in value):
        return True  # C#'s verbatim identifier "@operator", Perl's "@ARGV"
    ref = _NAME.match(value, 1) if value[:1] == "&" else None
    if (ref is not None and _word_part(ref.group(0))) or _PERL.match(value):
        return True  # a reference or a borrowed type: "&Path", "&mut self", "&Token<'a>", "&out", "\\&Meta::KEY"
    if value.isidentifier() and text[start - 2:start] == "= " and text[end:end + 1] == ";":
        return True  # "privateKey = priv;": a statement's variable (a connection string has no spaces)
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
    dotted = _DOTTED_HEAD.match(rest)
    if dotted is not None and rest[dotted.end():dotted.end() + 1] == ")" and "." in dotted.group(0).strip("."):
        if _name_like(dotted.group(0).rstrip(".")):
            return True  # a named argument closing its call: "cancellationToken: CancellationToken.None)"
    if code_context and text[start + head.end():start + head.end() + 1] == "(":
        return True  # "$password = prompt(...)": a call's result in a variable
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
    # camelCase or a CONSTANT before code punctuation: "privateKey: tString," in a schema, "client_secret: REDACT,"
    camel = any(a.islower() and b.isupper() for a, b in pairwise(value)) or (value.isupper() and len(value) >= 3)
    return camel and text[end:end + 1] in (",", ";", ")", "}")


def key_in_code(text: str, name_start: int, name: str) -> bool:
    """Is the key name written as code: an attribute (``self.token``), part of a tuple or an argument list?"""
    before = text[max(0, name_start - 2):name_start]
    if "." in name.strip(".") or before.endswith(".") or before == "->":
        return True
    if before[-1:] in ("*", "&", "$") and text[max(0, name_start - 2):name_start - 1] in ("", " ", "\t", "(", "\n"):
        return True  # C's "*passwdp = pbuf", "&token", Perl's or PHP's "$password": a variable
    i = name_start - 1
    while i >= 0 and text[i] in " \t":
        i -= 1
    return i >= 0 and text[i] in ",({"


# Words a credential is made of when it is a name: "client_secret", "opaque-token", "FACTOR_PASSWORD", "API key".
_KEY_WORD = re.compile(r"(?i)pass|pwd|token|key|secret|auth|cred|sess|cookie|pin\b")
_WORDS_ONLY = re.compile(r"[A-Za-z]+(?:[-_. :/][A-Za-z]+)*")
_CONSTANT = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
# A URL or URN with no user part: "https://api.fitbit.com/oauth2/token", "urn:ietf:params:oauth:token-type:saml2".
_URI = re.compile(r"(?:[a-z][a-z0-9+.\-]*://|urn:)[^\s@]*", re.I)
_RANGE = re.compile(r"a-z|A-Z|0-9")
_HEADER_NAME = re.compile(r"(?i)x-[a-z0-9]+(?:-[a-z0-9]+)+")
_PATH = re.compile(r"(?:~|\.{1,2})?(?:/[A-Za-z0-9._-]+){2,}/?")
# Values documentation and tests put where a credential goes.
_EXAMPLE_WORDS = frozenset(
    """test testing example sample dummy fake foo bar baz changeme placeholder redacted hidden masked none null
    password passwd pass pwd secret token key apikey xxx yyy abc abcd read write inherit header query cookie body
    path env file query_string required optional bearer basic digest dev""".split()
)
# English function words: a quoted value holding one of these among three words or more is a sentence.
_FUNCTION_WORDS = frozenset(
    """a an the is are was were be to of for in on at by with and or not no it its this that your you we our
    can cannot will must should may if when then than from into as""".split()
)


def _hump_words(name: str) -> set[str]:
    """The words of a name of 4 letters or more: "serviceAccountKey" -> {"service", "account"}."""
    return {w.lower() for w in _HUMP.findall(name) if len(w) >= 4 and w.isalpha()}


def is_named_value(key: str, value: str) -> bool:
    """Is the literal ``value`` under the secret-ish ``key`` a name, a URL or an example rather than a credential?

    A constant naming its parameter (``CLIENT_SECRET = "client_secret"``, ``OPAQUE_TOKEN = "opaque-token"``,
    ``serviceAccountKey = "service_account"``, ``webSearchApiKey: "API key"``), an env variable's name
    (``"AWS_SECRET_ACCESS_KEY"``), a URL without a user part, a sentence (``"A key is configured."``), a dotted
    name (``"org.example.TOKEN"``) or a word documentation puts there (``"test"``, ``"write"``). A value with a
    digit or a symbol beyond separators is never one of these, so "hunter2" and "Tr0ub4dor&3" stay secrets."""
    value = value.rstrip("=: ") or value  # "Password=", "Bearer ": the start of a connection string or header
    low = value.lower()
    if low in _EXAMPLE_WORDS or low in (key.lower(), key.rsplit(".", 1)[-1].lower()):
        return True
    if value.startswith("_") and value.isidentifier():
        return True  # "_tracingSpan", "_auth": a private name
    if value[:1] in "([^" and _RANGE.search(value) is not None:
        return True  # a regular expression's class: "([a-zA-Z0-9-!#$%&"
    if any(p.fullmatch(value) is not None for p in (_URI, _HEADER_NAME, _PATH)):
        return True  # "https://api.fitbit.com/oauth2/token", "X-aws-ec2-metadata-token", "/v1/instance/token"
    if value[:1] in "\"'" and value[1:].lstrip()[:1] in "+.":
        return True  # a concatenation: '" + this.clientSecret + \''

    words = value.split()
    if len(words) >= 3 and (any(w.lower().strip(".,;:!?") in _FUNCTION_WORDS for w in words)
                            or sum(not w.isalnum() for w in words) >= 2):
        return True  # a sentence, a user agent: "A key is configured.", "... (KHTML, like Gecko) Safari/537.36"
    if _CONSTANT.fullmatch(value) is not None:
        return True
    if _WORDS_ONLY.fullmatch(value) is None:
        return False
    if _KEY_WORD.search(value) is not None or _hump_words(value) & _hump_words(key):
        return True
    if any(w in low for w in ("placeholder", "example", "dummy", "redacted", "changeme")):
        return True
    parts = value.split(".")
    return len(parts) >= 2 and all(_word_part(p) for p in parts) and value.lower() != value.upper()


def is_name(value: str) -> bool:
    """Is ``value`` an identifier as code spells it ("TestAuthSwitchCachingSHA256PasswordEmpty"), not a random
    run of the same length?"""
    return value.isidentifier() and _word_part(value)
