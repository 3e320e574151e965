"""Secret redaction: every credential in a text or JSON tree becomes a typed, keyed placeholder.

``redact_text`` replaces each secret with ``[secret:<kind>#<4 hex>]``. The 4 hex digits are an HMAC-SHA256 of the
secret under a per-database key (``configure_key``), so one secret reads the same everywhere in a database
without being recoverable from it. Placeholders are never redacted again, so redaction is idempotent.

What detect-secrets contributes: its maintained regex denylists (one per ``RegexBasedDetector`` plugin: Slack,
GitLab, Twilio, SendGrid, Mailchimp, Discord, Telegram, Square, Artifactory, Cloudant, IBM, SoftLayer, ...), the
keyword list of its KeywordDetector (which key names make a value secret) and its Shannon entropy function. Its
own per-line scan is not used: it costs ~0.2 ms a line, reports GitHub tokens as "ghp", misses bare AWS secret
keys and prose passwords, and calls public IP addresses secrets. Our own rules cover those, plus PEM blocks
(also JSON-escaped and truncated), URL credentials, Authorization headers, env assignments, cookies and
English/Chinese prose. A prefilter runs a rule only when one of its literals (or, for unanchored token rules, a
long token-like run) occurs in the text, so ordinary prose costs a few substring searches.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib
import hmac
import json
import re
import string
import threading
from collections.abc import Callable
from functools import cached_property, lru_cache
from itertools import pairwise
from typing import Any, NamedTuple, TypeVar

from stratagate.safety import detector_data, ds_import
from stratagate.safety.codevalue import is_code_value, is_name, is_named_value, is_placeholder_value, key_in_code
from stratagate.safety.detector_data import Pattern

T = TypeVar("T")

DEFAULT_KEY = b"stratagate-default-redaction-key"
_key: bytes = DEFAULT_KEY
_key_version = 0


def configure_key(key: bytes) -> None:
    """Set the key of the placeholder hashes (the database's ``meta.redaction_key``)."""
    global _key, _key_version
    if not key:
        raise ValueError("the redaction key must not be empty")
    if bytes(key) != _key:
        _key, _key_version = bytes(key), _key_version + 1


def key_version() -> int:
    """Changes whenever the key does: caches of redacted text are valid for one version only."""
    return _key_version


def placeholder(kind: str, secret: str) -> str:
    digest = hmac.new(_key, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    return f"[secret:{kind}#{digest[:4]}]"


PLACEHOLDER_RE = re.compile(r"\[secret:[a-z0-9\-]+#[0-9a-f]{4}\]")


def placeholder_count(text: str) -> int:
    """How many secret placeholders ``text`` holds: where a restored text differs from what was originally said."""
    return len(PLACEHOLDER_RE.findall(text)) if "[secret:" in text else 0


def placeholder_clause(count: int) -> str:
    """The honest words for a restored text: what differs from the original, if anything."""
    if count == 0:
        return "exactly as it was"
    noun = "secret" if count == 1 else "secrets"
    return (f"as it was except {count} {noun} redacted before storage, shown as [secret:<kind>#<hash>] "
            "placeholders (the originals are not kept)")

def _entropy(s: str) -> float:
    return _shannon_entropy()(s)


# ------------------------------------------------------------------------------------------------ validators

_STOPWORDS = frozenset(
    """a an the is was are be been being to of for in on at by with and or not no it its this that these those
    my your our their his her me you we they i he she them set reset changed required incorrect wrong invalid
    valid correct too very so also still now here there what which who how when where why if then than as
    same different empty missing long short strong weak stored saved hidden secret safe unsafe expired
    needed necessary optional case sensitive sent shared ready done used protected encrypted hashed visible
    known unknown forgotten lost ok okay fine good bad great new old only just all any some none null true
    false yes undefined nil something anything nothing default blank unchanged updated rotated working
    enabled disabled configured stale leaked compromised always never usually given passed supplied provided
    ignored returned accepted rejected string number boolean object str int bytes already more less about
    currently actually really being then there header headers field value values argument parameter option
    through via into onto over under after before during within without per against between like unlike
    query cookie body read write inherit same either neither both each every such another other must should
    can will may might could would shall""".split()
)
# What makes "be" a rule rather than a statement: "the password must be 8 characters", "won't be re-checked".
_MODALS = frozenset("can cannot can't could must should shall will won't would may might need needs".split())
# Words that start another clause: a copula after one of them belongs to it ("the password when it is ...").
_CLAUSE_BREAKS = frozenset("when if it that which because while since unless whether but nor where who they".split())
# Adverbs between a modal and "be" ("can only be", "must not be", "will always be").
_ADVERBS = frozenset("only not never always also just still ever even".split())
# Hyphenated words of prose: "re-checked", "well-known", "auto-generated", "non-empty".
# Markup around a word: POD's C<$pass>, an XML tag <password>.
_CLOSING_TAG = re.compile(r"</[A-Za-z][\w-]*>")
_SCHEME = re.compile(r"(?:\\[nr])*[A-Za-z][A-Za-z0-9+.-]*://[A-Za-z0-9]")
_MARKUP = re.compile(r"[A-Z]?<[^<>\s]*>")
_HYPHEN_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)+")
_WORD_PREFIXES = ("re", "pre", "non", "un", "self", "auto", "co", "sub", "multi", "well", "user", "server", "client")
_ORDINARY_SUFFIXES = (
    "ed", "ing", "ly", "able", "ible", "ful", "less", "ous", "ive", "tion", "ment", "ness", "ory", "ary",
)


def _has_digit(s: str) -> bool:
    return any(c.isdigit() for c in s)


def _classes(s: str) -> int:
    return sum(
        (
            any(c.islower() for c in s),
            any(c.isupper() for c in s),
            any(c.isdigit() for c in s),
            any(not c.isalnum() for c in s),
        )
    )


def _random_looking(s: str, min_len: int = 16) -> bool:
    """A credential-like value: long, several character classes, high entropy."""
    if len(s) < min_len or PLACEHOLDER_RE.search(s):
        return False
    if not _has_digit(s) and _classes(s) < 3:
        return False
    return _entropy(s) >= 3.0


def _password_like(token: str, strong: bool, quoted: bool) -> bool:
    """After 'password is ...': is this token the password or an ordinary word?"""
    if not token or PLACEHOLDER_RE.fullmatch(token):
        return False
    low = token.lower()
    if low in _STOPWORDS:
        return False
    if quoted and len(token) >= 3:
        return True
    if _CLOSING_TAG.search(token) or token.startswith(("{", "<")):
        return False  # markup or a template around a word: "Encoding</h2>", "non-{@code"
    if _HYPHEN_WORD.fullmatch(token) and (low.endswith(_ORDINARY_SUFFIXES) or low.split("-")[0] in _WORD_PREFIXES
                                          or (token.islower() and token.count("-") == 1)):
        return False  # "re-checked", "one-way": prose
    if token.isalpha() and token.isupper() and len(token) > 3:
        token = low  # a word of a sentence in capitals ("SHALL SECRET LABS ... BE LIABLE") is read as a word
    # A symbol is looked for first: in a long run ("pin=pin=pin=…") it comes within a few characters.
    if not strong and (token.isalpha() or is_name(token)):
        return False  # "credential_source is Ec2InstanceMetadata": a name under token, secret or credential
    if any(not c.isalnum() for c in token) or _has_digit(token) or (token[1:] != token[1:].lower()):
        if token.isdigit():
            return strong and len(token) >= 4
        return len(token) >= (3 if strong else 6)
    if not strong:
        return False
    return len(token) >= 4 and token.isascii() and not low.endswith(_ORDINARY_SUFFIXES)


def _wordy(s: str) -> bool:
    """Dash-separated lowercase words (a slug such as 'usage-monitoring-service'), not a random key."""
    return len(re.findall(r"(?:^|-)[a-z]{3,}(?=-|$)", s)) >= 2


def _not_hex(s: str) -> bool:
    return not re.fullmatch(r"[0-9a-fA-F]+", s)


def _aws_secret(s: str) -> bool:
    """A bare 40-character AWS secret access key, not a git SHA or a path."""
    return (
        len(s) == 40
        and _not_hex(s)
        and sum(c.isdigit() for c in s) >= 2
        and sum(c.isupper() for c in s) >= 2
        and sum(c.islower() for c in s) >= 2
        and s.count("/") <= 3
        and "//" not in s
        and _entropy(s) >= 4.2
        and not is_name(s)  # a long test name: TestAuthSwitchCachingSHA256PasswordEmpty
        and not ("/" in s and all(is_name(part) for part in s.split("/") if part))  # Suite/level1/html/Element01
        and not _base64_text(s)  # "UGF0aWVuY2UgaXMgdGhlIGtleSB0byBzdWNjZXNz": "Patience is the key to success"
        and 5 * sum(a < b for a, b in pairwise(s)) < 4 * len(s)  # not a sorted run: [0123456789EFGHIK…]
    )


def _base64_text(s: str) -> bool:
    """Does ``s`` decode from base64 to printable words (a test vector), not to key bytes?"""
    try:
        decoded = base64.b64decode(s + "=" * (-len(s) % 4), validate=True).decode("ascii")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False
    return decoded.isprintable() and " " in decoded


def _basic_credentials(s: str) -> bool:
    try:
        decoded = base64.b64decode(s + "=" * (-len(s) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False
    return ":" in decoded and decoded.isprintable()


def _masked(s: str) -> bool:
    """Is ``s`` a form's template rather than a value: mostly X, x or * ("xoxp-XXXXXXXXXX-…")?"""
    filler = sum(c in "Xx*" for c in s)
    return len(s) >= 8 and 5 * filler >= 4 * sum(c.isalnum() or c == "*" for c in s)


def _credential_shaped(s: str) -> bool:
    """An Authorization value: a digit, or three kinds of character, or a long random run ("header",
    "username=" are words of the header's description)."""
    low = s.lower().rstrip(".,;:")
    if low in _STOPWORDS or low in ("bearer", "basic", "token", "digest", "negotiate", "ntlm"):
        return False
    return _has_digit(s) or _classes(s) >= 3 or _random_looking(s, 16)


def _bearer(s: str) -> bool:
    return len(s) >= 8 and (_has_digit(s) or _classes(s) >= 3) and s.lower() not in _STOPWORDS


def _env_value(name: str, value: str) -> bool:
    if not value or value.startswith(("$", "<", "%", "{{")) or value.lower() in _STOPWORDS:
        return False
    if is_named_value(name, value.rstrip(";,")) or (value.startswith("`") and "${" in value):
        return False  # CLIENT_SECRET = "client_secret", AWS_KEY = "AWS_KEY": a constant naming its parameter
    if re.fullmatch(r"0[xX][0-9a-fA-F]+[uUlL]*[;,]?", value) or "PUBLIC" in name.upper():
        return False  # SOCKS5_NO_ACCEPTABLE_AUTH = 0xff: a number
    if value.rstrip(";,").isdigit() and not name.upper().endswith(("PASSWORD", "PASSWD", "PWD", "PASS")):
        return False  # SOCKS5_NO_ACCEPTABLE_AUTH = 255: a token, key or auth name holds a string, not a number
    if name.upper().endswith("KEY"):
        return _random_looking(value, 12)
    return len(value) >= 3


# ------------------------------------------------------------------------------------------------ rules


class Rule:
    """One pattern and what it finds; compiled on its first use (most texts wake a few rules, a start none or the
    handful that look at long token-like runs: compiling all ~60 costs ~15 ms)."""

    def __init__(self, kind: str, source: str, flags: int = 0, group: int | str = 0,
                 check: Callable[[str], bool] | None = None):
        self.kind, self.source, self.flags = kind, source, flags
        self.group = group  # which group is the secret
        self.check = check

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.source, self.flags)


_B = r"(?<![A-Za-z0-9_])"  # left token boundary
_E = r"(?![A-Za-z0-9_])"  # right token boundary


class _Spec(NamedTuple):
    """One of our rules as declared (the detector makes a ``Rule`` of it)."""

    kind: str
    pattern: str
    group: int | str
    check: Callable[[str], bool] | None
    flags: int


def _r(kind: str, pattern: str, group: int | str = 0, check: Callable[[str], bool] | None = None,
       flags: int = 0) -> _Spec:
    return _Spec(kind, pattern, group, check, flags)


# Our rules; each is compiled on its first use (Rule.pattern), not at import (~7 ms for all).
_OWN_RULES: list[_Spec] = [
    _r("anthropic-key", _B + r"sk-ant-[A-Za-z0-9_\-]{20,}"),
    # No left boundary: a key glued to other text must still be caught ("disk-usage-..." is not a key).
    _r("sk-api-key", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", 0, lambda s: not _wordy(s[3:])),
    _r("aws-access-key-id", r"(?<![A-Za-z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)"
       r"[A-Z0-9]{16}(?![A-Za-z0-9])"),
    _r("aws-secret-key", r"(?i)aws.{0,30}?(?:secret|key|token|pass)[\w\-\"']{0,30}?\s*(?:=|:|=>|\s)\s*[\"']?"
       r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", 1),
    _r("aws-secret-key", r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])", 0, _aws_secret),
    _r("github-fine-grained-token", _B + r"github_pat_[A-Za-z0-9_]{22,}"),
    _r("github-token", _B + r"ghp_[A-Za-z0-9]{30,}"),
    _r("github-oauth-token", _B + r"gh[ou]_[A-Za-z0-9]{30,}"),
    _r("github-app-token", _B + r"gh[sr]_[A-Za-z0-9]{30,}"),
    _r("gitlab-token", _B + r"(?:glpat|gldt|glft|glsoat|glrt|glcbt|glimt|glptt|gloas)-[A-Za-z0-9_\-]{20,}"),
    _r("slack-token", _B + r"xox[abposre]-[A-Za-z0-9\-]{10,}"),
    _r("slack-token", _B + r"xapp-\d-[A-Za-z0-9\-]{10,}"),
    _r("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]+"),
    _r("discord-webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+"),
    _r("stripe-key", _B + r"(?:sk|rk)_(?:live|test)_[0-9a-zA-Z]{16,}"),
    _r("stripe-key", _B + r"whsec_[0-9a-zA-Z]{24,}"),
    _r("google-api-key", _B + r"AIza[0-9A-Za-z_\-]{35}"),
    _r("gcp-private-key-id", r"(?i)[\"']?private_key_id\\?[\"']?\s*[:=]\s*\\?[\"']?([0-9a-f]{40})", 1),
    _r("jwt", _B + r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    _r("npm-token", _B + r"npm_[A-Za-z0-9]{36}"),
    _r("pypi-token", _B + r"pypi-AgE[A-Za-z0-9_\-]{50,}"),
    _r("huggingface-token", _B + r"hf_[A-Za-z0-9]{30,}"),
    _r("twilio-key", _B + r"(?:AC|SK)[0-9a-f]{32}" + _E),
    _r("sendgrid-key", _B + r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{30,}"),
    _r("mailchimp-key", _B + r"[0-9a-f]{32}-us[0-9]{1,2}" + _E),
    _r("telegram-bot-token", r"(?<![0-9])\d{8,10}:AA[0-9A-Za-z_\-]{33}" + _E),
    _r("vault-token", _B + r"hv[sb]\.[A-Za-z0-9_\-]{20,}"),
    _r("azure-storage-key", r"(?i)(?:AccountKey|SharedAccessKey)\s*=\s*([A-Za-z0-9+/=]{20,})", 1),
    _r("azure-storage-key", r"(?i)[?&]sig=([A-Za-z0-9%+/=]{20,})", 1),
    _r("url-password", r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s/:@\"'<>]+:([^\s/@\"'<>]+)@", 1,
       lambda s: not is_placeholder_value(s) and s.lower() not in ("password", "passwd", "pass", "pwd", "secret")),
    _r("bearer-token", r"(?i)\bbearer\s+([A-Za-z0-9._~+/\-]+=*)", 1, _bearer),
    _r("basic-auth", r"(?i)\bbasic\s+([A-Za-z0-9+/]{8,}=*)", 1, _basic_credentials),
    _r("authorization", r"(?i)\b(?:proxy-)?authorization\\?[\"']?\s*[:=]\s*\\?[\"']?"
       r"(?:(?:bearer|basic|token|digest)\s+)?(?!(?:bearer|basic|token|digest)\s)([A-Za-z0-9._~+/=\-]{6,})", 1,
       lambda s: _credential_shaped(s) and not is_named_value("authorization", s)),
    _r("session-id", r"(?i)\b(?:session[_\-]?id|sessionid|phpsessid|jsessionid|connect\.sid|csrftoken|"
       r"session[_\-]?token|_session|sid)\\?[\"']?\s*[=:]\s*\\?[\"']?([A-Za-z0-9%._\-+/=]{8,})", 1,
       lambda s: _random_looking(s, 8)),
]

# Which detect-secrets denylists we take, under which kind. Left out on purpose: 'Public IP (ipv4)' (not a
# secret), 'JSON Web Token' (its lazy pattern stops after the header), 'GitHub Token' (its group is "ghp"),
# 'NPM tokens' (swallows the rest of the line), 'Private Key' (only the BEGIN line) — ours cover those.
_DS_KINDS = {
    "AWS Access Key": "aws-access-key-id",
    "Artifactory Credentials": "artifactory-token",
    "Azure Storage Account access key": "azure-storage-key",
    "Basic Auth Credentials": "url-password",
    "Cloudant Credentials": "cloudant-key",
    "Discord Bot Token": "discord-token",
    "GitLab Token": "gitlab-token",
    "IBM Cloud IAM Key": "ibm-cloud-key",
    "IBM COS HMAC Credentials": "ibm-cos-key",
    "Mailchimp Access Key": "mailchimp-key",
    "OpenAI Token": "sk-api-key",
    "PyPI Token": "pypi-token",
    "SendGrid API Key": "sendgrid-key",
    "Slack Token": "slack-token",
    "SoftLayer Credentials": "softlayer-key",
    "Square OAuth Secret": "square-key",
    "Stripe Access Key": "stripe-key",
    "Telegram Bot Token": "telegram-bot-token",
    "Twilio API Key": "twilio-key",
}


def _ds_rules(patterns: list[Pattern]) -> list[Rule]:
    return [Rule(p.kind, p.pattern, p.flags, p.group) for p in patterns]


_PEM_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?)-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----")
_PEM_SEP = re.compile(r"\\r\\n|\\n|\\r|\r\n|\n|\r")
_PEM_LINE = re.compile(r"[ \t]*(?:[A-Za-z0-9+/=]*|[A-Za-z][A-Za-z\-]*: [^\n\\]*)[ \t]*")
_PEM_PREFIX = re.compile(r"[A-Za-z0-9+/=]*")
_PEM_TAIL = re.compile(
    r"(?:(?:\\r\\n|\\n|\\r|\s)+(?:[A-Za-z][A-Za-z\-]*:[^\n\\\"]*|[A-Za-z0-9+/=]{4,}))+"
)
_PEM_BODY = re.compile(r"[A-Za-z0-9+/]{32}")
_PUTTY = re.compile(r"PuTTY-User-Key-File-\d: [\s\S]*?Private-MAC: [0-9a-f]+")


def _pem_spans(text: str) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []
    pos = 0
    while (m := _PEM_BEGIN.search(text, pos)) is not None:
        end_m = _PEM_END.search(text, m.end(), m.end() + 100_000)
        if end_m is not None and _PEM_BEGIN.search(text, m.end(), end_m.start()) is None:
            if _PEM_BODY.search(text, m.end(), end_m.start()) is None:
                pos = end_m.end()  # no key between the lines: code writing the armor ("push('-----BEGIN …')")
                continue
            end = end_m.end()
        else:
            # No END: a truncated block, or one whose line breaks became spaces or JSON escapes. Take everything
            # key-like that follows: armor headers ("Version: …", to the end of their line) and base64 runs, across
            # real or escaped line breaks and spaces. Over-redacting a trailing word beats leaking a key body.
            tail = _PEM_TAIL.match(text, m.end())
            if tail is None:
                pos = m.end()  # a BEGIN line with no key after it: a mention ("if the file begins with ...")
                continue
            end = tail.end()
        spans.append((m.start(), end, "private-key"))
        pos = max(end, m.end())
    for m in _PUTTY.finditer(text):
        spans.append((m.start(), m.end(), "private-key"))
    return spans


# Key names whose value is a secret. The strong list is detect-secrets' KeywordDetector denylist plus ours.
_OWN_KEYWORDS = [
    "passphrase", "passcode", "client[_\\-]?secret", "access[_\\-]?key", "secret[_\\-]?key", "private[_\\-]?key",
    "auth[_\\-]?token", "access[_\\-]?token", "refresh[_\\-]?token", "api[_\\-]?token", "bot[_\\-]?token",
    "id[_\\-]?token", "bearer[_\\-]?token", "_authtoken",
]
_TEMPLATE = re.compile(r"\$\{[A-Za-z][\w.]*\}")  # "/${desc.name}": a template's slot, not a value
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+[uUlL]*|[0-9]+[uUlL]+")
_LEAD_NAME = re.compile(r"[A-Za-z_$][\w$]*")
_MORE_WORDS = re.compile(r"[ \t]+[A-Za-z]")
_ASSIGN_KEY = re.compile(r"pass|pwd|secret|token|key|pin|contrase")
_ASSIGN_KEY_I = re.compile(_ASSIGN_KEY.pattern, re.I)
_ENV_LITERALS = ("TOKEN", "SECRET", "PASS", "PWD", "KEY", "CREDENTIAL", "AUTH")
_ASSIGN_VALUE = re.compile(
    r"\\?[\"']?[ \t]*(?:=|:=|=>|:)[ \t]*\\?(?:\"([^\"\n]{1,200}?)\\?\"|'([^'\n]{1,200})'|([^\s\"'`,;&}\]\\]+))"
)
_ENV = re.compile(
    r"(?<![A-Za-z0-9_])([A-Z][A-Z0-9_]*_(?:TOKEN|SECRET|PASSWORD|PASSWD|PWD|PASS|KEY|CREDENTIALS?|AUTH))"
    r"\s*=\s*([\"']?)([^\s\"']+)"
)

_PROSE_KEY = re.compile(
    r"(?i)\b((?:wi-?fi|wlan|wpa2?|network|router) (?:key|password|passphrase|pass)|"
    r"pass(?:word|wd|phrase|code)|pass word|pwd|pin(?: ?code)?|secret(?: key)?|api ?key|access key|"
    r"token|credentials?)\b"
)
# A credential named without a copula: "log in as alice with password hunter2-Blue!", "user admin / pass Xy7$kq!".
_PROSE_DIRECT = re.compile(
    r"(?i)(?:(\bwith|\busing|\band|(?<!/)/(?!/)|,)[ \t]+(?:the[ \t]+)?)?\b(pass(?:word|wd|phrase)?|pwd|pw)[ \t]+"
)
# A copula word is a whole word ("to" is not the start of "tokenize"); "==" and "!=" compare, they do not state.
_PROSE_COPULA = re.compile(
    r"(?i)(?:[ \t]+(?:(?:is|was|are|were|to|be|becomes?)(?![\w=])|=(?!=))\s*(?::|=(?!=))?|(?::|=(?!=))"
    r"|[ \t]+(?::(?=\s)|=(?!=)))\s*"
)
_PROSE_WORD = re.compile(r"\s*[^\s]+")
_PROSE_TOKEN = re.compile(r"([\"'“‘`]?)([^\s\"'“”‘’`]+)")
_ZH_KEY = re.compile(r"(密码|口令|密钥|秘钥|令牌|验证码|PIN码|pin码|支付密码|私钥)")
_ZH_TOKEN = re.compile(r"[^\n]{0,12}?(?:是|为|：|:|=)\s*([\"'“‘「]?)([\x21-\x7e]{3,})")

class _Loaded:
    """What comes from detect-secrets' data, built on first use: its patterns and keyword list are read from a cache
    file (safety/detector_data.py), so a text with a candidate does not import the package (~0.1 s of CPU)."""

    def __init__(self) -> None:
        data = detector_data.load(_DS_KINDS)
        strong = [k.replace("_?", "[_\\-]?") for k in data.keywords] + _OWN_KEYWORDS
        self.rules: list[Rule] = [Rule(r.kind, r.pattern, r.flags, r.group, r.check) for r in _OWN_RULES]
        self.rules += _ds_rules(data.patterns)
        self._strong = strong

    @cached_property
    def name_ok(self) -> re.Pattern[str]:
        return re.compile(r"(?i)(?:" + "|".join(self._strong) + r"|token|pin)")

    @cached_property
    def strong_name(self) -> re.Pattern[str]:
        return re.compile(r"(?i)" + "|".join(self._strong))


_state: _Loaded | None = None
# Reentrant: building the detector may judge entropy. detect-secrets itself is imported through safety/ds_import,
# whose one lock keeps two threads (the start-up warm-up and the loop) from importing its circular package at once.
_state_lock = threading.RLock()
_entropy_fn: Callable[[str], float] | None = None


def _loaded() -> _Loaded:
    global _state
    if _state is None:
        with _state_lock:
            if _state is None:
                _state = _Loaded()
    return _state


def _shannon_entropy() -> Callable[[str], float]:
    """detect-secrets' entropy function, imported with the first value it must judge (the package import is the
    cost: ~0.1 s; the sidecar does it in a thread after its first answer, ``warm``)."""
    global _entropy_fn
    if _entropy_fn is None:
        with _state_lock:
            if _entropy_fn is None:
                plugin = ds_import.module("detect_secrets.plugins.high_entropy_strings").Base64HighEntropyString
                _entropy_fn = plugin().calculate_shannon_entropy
    return _entropy_fn


def warm() -> None:
    """Build the detector and import detect-secrets' entropy function now, so that no text redacted on the event loop
    builds them there (the sidecar calls this in a thread once its first answer is out, App.answered); and the
    heuristic filters safety/codevalue asks."""
    _loaded()
    _shannon_entropy()
    ds_import.module("detect_secrets.filters.heuristic")


def _kind_from_name(name: str) -> str:
    n = re.sub(r"[\s_\-.]", "", name.lower())
    for needle, kind in (
        ("clientsecret", "client-secret"),
        ("privatekeyid", "gcp-private-key-id"),
        ("privatekey", "private-key"),
        ("secretaccesskey", "aws-secret-key"),
        ("accesskey", "access-key"),
        ("apikey", "api-key"),
        ("passphrase", "password"),
        ("passcode", "password"),
        ("password", "password"),
        ("passwd", "password"),
        ("pwd", "password"),
        ("pass", "password"),
        ("authorization", "authorization"),
        ("cookie", "cookie"),
        ("session", "session-id"),
        ("secret", "secret"),
        ("token", "token"),
        ("credential", "credential"),
        ("pin", "pin"),
        ("key", "secret-key"),
    ):
        if needle in n:
            return kind
    return "secret"


KINDS: list[str] = sorted(
    {r.kind for r in _OWN_RULES} | set(_DS_KINDS.values())
    | {"private-key", "password", "pin", "secret", "token", "api-key", "access-key", "client-secret",
       "authorization", "cookie", "session-id", "credential", "secret-key", "gcp-private-key-id"}
)


# ------------------------------------------------------------------------------------------------ scanning

Span = tuple[int, int, str]


def _value_span(m: re.Match[str], group: int | str) -> tuple[int, int]:
    start, end = m.span(group)
    if group == 0:  # trim boundary characters some denylist patterns include
        while start < end and m.string[start] in " \t\r\n=:\"'":
            start += 1
    while end > start and m.string[end - 1] in " \t\r\n\"'\\":
        end -= 1
    return start, end


# The prefilter: a rule runs only when one of its literals occurs in the lowercased text (a C-level substring
# search); a rule with no literal anchor (None) runs only when the text has a long token-like run.
_TRIGGERS: dict[str, tuple[str, ...] | None] = {
    "anthropic-key": ("sk-ant-",),
    "sk-api-key": ("sk-",),
    "aws-access-key-id": ("a3t", "akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "anpa", "anva", "aipa"),
    "aws-secret-key": None,
    "github-fine-grained-token": ("github_pat_",),
    "github-token": ("ghp_",),
    "github-oauth-token": ("gho_", "ghu_"),
    "github-app-token": ("ghs_", "ghr_"),
    "gitlab-token": ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "glcbt-", "glimt-", "glptt-", "gloas-",
                     "gr1348941", "glagent-"),
    "slack-token": ("xox", "xapp-"),
    "slack-webhook": ("hooks.slack.com",),
    "discord-webhook": ("discord",),
    "stripe-key": ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"),
    "google-api-key": ("aiza",),
    "gcp-private-key-id": ("private_key_id",),
    "jwt": ("eyj",),
    "npm-token": ("npm_",),
    "pypi-token": ("pypi-",),
    "huggingface-token": ("hf_",),
    "twilio-key": None,
    "sendgrid-key": ("sg.",),
    "mailchimp-key": ("-us",),
    "telegram-bot-token": None,
    "vault-token": ("hvs.", "hvb."),
    "azure-storage-key": ("accountkey", "sharedaccesskey", "sig="),
    "url-password": ("://",),
    "authorization": ("authorization",),
    "bearer-token": ("bearer",),
    "basic-auth": ("basic",),
    "session-id": ("sess", "sid", "csrf"),
    "artifactory-token": None,
    "cloudant-key": ("cloudant", "clou", "cl_", "cl-", "clkey", "clpw", "clpass", "cltoken", "clapi"),
    "ibm-cloud-key": ("key", "pwd", "pass", "token"),
    "ibm-cos-key": ("secret",),
    "softlayer-key": ("softlayer", "sl_", "sl-", "slkey", "slapi", "slpass", "slpwd", "sltoken"),
    "square-key": ("sq0csp-",),
    "discord-token": None,
}
_RUN_CHAR_SET = frozenset(string.ascii_letters + string.digits + "+/_-")
_LONG_RUN = re.compile(r"[A-Za-z0-9+/_\-]{20}")  # a run of _RUN_CHAR_SET
# ``_LONG_RUN`` for ASCII text at C speed: every character of a run becomes "x", every other one a space, then one
# substring search (the pattern tries up to 20 characters at every position: ~3x slower on a 2 KB tool result).
_RUN_CHARS = str.maketrans({c: "x" if c in _RUN_CHAR_SET else " " for c in map(chr, range(128))})
_RUN = "x" * 20



def _has_long_run(text: str, lo: int, hi: int) -> bool:
    """``_LONG_RUN.search(text, lo, hi) is not None``."""
    if text.isascii():
        return _RUN in text[lo:hi].translate(_RUN_CHARS)
    return _LONG_RUN.search(text, lo, hi) is not None


_KEYWORD_LITERALS = ("pass", "pwd", "secret", "token", "key", "auth", "cookie", "sess", "pin", "credential")
_ZH_LITERALS = ("密码", "口令", "密钥", "秘钥", "令牌", "验证码", "私钥")


_ALL_TRIGGERS = frozenset(t for ts in _TRIGGERS.values() if ts for t in ts)
# Every word that can make ``_line_spans`` look further, as one pattern: most texts (dict keys, titles, ordinary
# prose) hold none and no long run, and then one C-speed search answers instead of ~100 substring checks and a pass
# over every rule. It must list every literal ``_line_spans`` tests below.
def _any_of(words: set[str]) -> str:
    """A pattern found in a text exactly when one of ``words`` is: the words as a prefix tree, so the engine tests
    one character class per position instead of every word (~4x faster than a flat alternation). A word that
    starts with another word is left out (the shorter one is in any text that holds the longer)."""
    tree: dict[str, Any] = {}
    for word in words:
        node = tree
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def branch(node: dict[str, Any]) -> str:
        if "" in node:
            return ""
        alts = [re.escape(ch) + branch(child) for ch, child in sorted(node.items())]
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return branch(tree)


_ANY_TRIGGER = re.compile(_any_of({*_ALL_TRIGGERS, *_KEYWORD_LITERALS, *_ZH_LITERALS, "pass", "pw"}))


def _line_spans(text: str, low: str, lo: int, hi: int) -> list[Span]:
    """The rule spans of ``text[lo:hi]``; ``low`` is ``text.lower()``. Triggers are looked for in this window only,
    so one keyword in a long tool result does not make every rule scan all of it."""
    window = low[lo:hi]
    long_run = _has_long_run(text, lo, hi)
    if not long_run and _ANY_TRIGGER.search(window) is None:
        return []
    present = {t for t in _ALL_TRIGGERS if t in window}
    spans: list[Span] = []
    for rule in _loaded().rules:
        triggers = _TRIGGERS.get(rule.kind)
        if (triggers is None and not long_run) or (triggers is not None and present.isdisjoint(triggers)):
            continue
        for m in rule.pattern.finditer(text, lo, hi):
            try:
                start, end = _value_span(m, rule.group)
            except IndexError:
                continue
            if end - start < 3:
                continue
            if rule.check is not None and not rule.check(text[start:end]):
                continue
            if rule.kind not in ("sk-api-key", "anthropic-key") and _masked(text[start:end]):
                continue  # "xoxp-XXXXXXXXXX-XXXXXXXXXX-…": a template of the token's form (a model key is always one)
            if rule.kind == "aws-access-key-id" and (text[start - 1:start].isalnum() or text[end:end + 1].isalnum()):
                continue  # inside a longer run of hex digits: a number, not a key id
            if rule.kind in _NAME_CHECKED and is_named_value(rule.kind, text[start:end]):
                continue  # ftp://user:password@host, "X-aws-ec2-metadata-token": a documented form, a header name
            unquoted = text[start - 1:start] not in ("'", '"')
            if rule.kind in _CODE_CHECKED and unquoted and is_code_value(text, start, end):
                continue  # authorization = self.headers.get(...): a header read in code, not a credential
            spans.append((start, end, rule.kind))
    keywords = any(k in window for k in _KEYWORD_LITERALS)
    if keywords:
        spans.extend(_assign_spans(text, low, lo, hi))
    if keywords or any(k in window for k in _ZH_LITERALS):
        spans.extend(_prose_spans(text, lo, hi))
    if "pass" in window or "pw" in window:
        spans.extend(_direct_spans(text, lo, hi))
    return spans


# The last part of a key name holds the key word: "db_password", "authKey", not "password_store".
# The word after the key word is the same word in the same case ("Password", "PASSWORDS"), not a new camelCase word
# ("adminSecretNamespace" names a namespace).
_LAST_PART_KEY = re.compile(r"(?i:pass|pwd|secret|token|key|pin|contrase|auth|cred)(?:[a-z]{0,9}|[A-Z]{0,9})[0-9]?$")
_CODE_ACCESS = re.compile(r"(?:\??\.[A-Za-z_$]|[(\[]|::|<[A-Za-z&'?])")
_SETTING = re.compile(r"(?i)\b(?:set|sets|setting|change|changed|changing|reset|update|updated|switch|switched)\b")

# Rules whose value may be code reading the header or cookie rather than its value.
_CODE_CHECKED = frozenset({"authorization", "session-id"})
# Rules whose value may be a name or an example word (detect-secrets' URL pattern has no check of its own).
_NAME_CHECKED = frozenset({"authorization", "session-id", "url-password"})

_WINDOW = 2048
_OVERLAP = 512  # characters two windows of one long line share: a keyword and a value shorter than this are seen whole


def _windows(text: str) -> list[tuple[int, int]]:
    """Line-aligned windows of about ``_WINDOW`` characters, each overlapping the next by one line (a rule whose
    match spans a line break, such as ``password:\nvalue``, still sees both lines). PEM blocks are found on the
    whole text. A longer line is cut into windows of ``_WINDOW`` characters overlapping by ``_OVERLAP``
    characters: the checks after a keyword look at its whole value, and a long line of repeated keywords
    (``pin=pin=…``) would cost the square of its length in one window (seconds for 20 KB)."""
    n = len(text)
    if n <= 2 * _WINDOW:
        return [(0, n)]
    out: list[tuple[int, int]] = []
    lo = 0
    while lo < n:
        cut = text.find("\n", min(lo + _WINDOW, n))
        hi = n if cut < 0 else cut + 1
        if hi - lo > 2 * _WINDOW:  # no line break in reach: cut inside the long line
            hi = lo + _WINDOW
            out.append((lo, hi))
            lo = hi - _OVERLAP
            continue
        out.append((lo, hi))
        if hi >= n:
            break
        last = text.rfind("\n", lo, hi - 1)  # the last line of this window starts the next one
        lo = last + 1 if last + 1 > lo else hi
    return out


def _assign_spans(text: str, low: str, lo: int, hi: int) -> list[Span]:
    spans: list[Span] = []
    window = text[lo:hi]
    env = _ENV.finditer(text, lo, hi) if any(k in window for k in _ENV_LITERALS) else ()
    for hit in env:
        value = hit.group(3)
        if is_placeholder_value(value) or (hit.group(2) == "" and is_code_value(text, hit.start(3), hit.end(3))):
            continue
        if _env_value(hit.group(1), value):
            spans.append((hit.start(3), hit.end(3), _kind_from_name(hit.group(1))))
    seen_ends: set[int] = set()
    # Keyword hits on the lowercased text (same offsets unless lowercasing changed a length).
    hits = _ASSIGN_KEY.finditer(low, lo, hi) if len(low) == len(text) else _ASSIGN_KEY_I.finditer(text, lo, hi)
    name_end = lo
    for k in hits:
        # The key name around the keyword, then the operator and the value: no backtracking over names.
        start, end = k.start(), k.end()
        if start < name_end:  # inside the name just read ("tokentoken…"): the same name, already handled
            continue
        while start > lo and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
            start -= 1
        while end < hi and (text[end].isalnum() or text[end] in "_.-"):
            end += 1
        name_end = end
        if end in seen_ends or (start > lo and text[start - 1].isalnum()) or _inside_word(text, k.start(), k.end()):
            continue
        seen_ends.add(end)
        m = _ASSIGN_VALUE.match(text, end, hi)
        if m is None:
            continue
        name = text[start:end]
        if _loaded().name_ok.search(name) is None:
            continue
        group = 1 if m.group(1) is not None else 2 if m.group(2) is not None else 3
        value, quote = m.group(group), group != 3
        strong = _loaded().strong_name.search(name) is not None and not re.search(r"(?i)tokens|keys\b", name)
        if PLACEHOLDER_RE.search(value) or value.startswith(("$", "<", "{{")) or not value.strip():
            continue
        if value.lower() in _STOPWORDS or (quote and (is_placeholder_value(value) or len(value) < 3)):
            continue
        if text.startswith("::", end) or "${" in value or _arn_segment(text, start, end):
            continue  # Token::Ident(...), Secret::from(...): a path; `[a-z]${RANGE}`: a template; arn:…:secret:x
        if is_named_value(name, value.rstrip(";,):]}")):
            continue
        if not quote and value.isalpha() and _MORE_WORDS.match(text, m.end(group)):
            continue  # "passwd:         files systemd": a list of words, not one credential
        if not _LAST_PART_KEY.search(name) or "public" in name.lower():
            continue  # "--password-store=basic", "MODULE_PWD_STATE", "PublicKeyToken": it names something else
        if _NUMBER.fullmatch(value):
            continue  # POLICY_CREATE_SECRET = 0x00000020L: a constant
        lead = _LEAD_NAME.match(value)
        last = name.rsplit(".", 1)[-1].lower()
        if lead is not None and lead.group(0).lower().strip("$") == last:
            continue  # "cancellationToken: cancellationToken)", "Credentials$ = Credentials$": a variable passed on
        if len(last) >= 5 and value.lower().endswith(("_" + last, "-" + last, "." + last)):
            continue  # "hlToken": "uV2eYG_hlToken": an id made from its own name (minified bundles)
        if (not quote and is_code_value(text, m.start(group), m.end(group),
                                                                      key_in_code(text, start, name))):
            continue
        if strong:
            ok = bool(quote) or _password_like(value, True, False) or _random_looking(value, 8)
        else:
            ok = _random_looking(value, 16) or (bool(quote) and _random_looking(value, 10))
        if ok:
            spans.append((m.start(group), m.end(group), _kind_from_name(name)))
    return spans


def _arn_segment(text: str, start: int, end: int) -> bool:
    """Is the key word one segment of a colon path ("arn:aws:secretsmanager:…:secret:Name"), not a key?"""
    return text[start - 1:start] == ":" == text[end:end + 1] and text[end + 1:end + 2] not in ("", " ", "\t", "\n")


def _inside_word(text: str, start: int, end: int) -> bool:
    """Is the short key word "pin" part of another word ("mapping", "MAPPING", "spinner"), not a name part?"""
    if end - start != 3 or text[start:end].lower() != "pin":
        return False
    before, after = text[start - 1:start], text[end:end + 4]
    same_case_before = before.isalpha() and before.islower() == text[start].islower()
    glued_after = after[:1].isalpha() and after.lower() != "code" and after[:1].islower() == text[end - 1].islower()
    return same_case_before or glued_after


def _direct_spans(text: str, lo: int, hi: int) -> list[Span]:
    """Credentials named without "is" or ":": the word after "password" when it looks like one. After "with",
    "using", "and", "/" or "," (a login being described) a digit or symbol is enough; otherwise it takes a digit
    and a symbol or capital, 8 characters or more ("password reset", "password hashlib" stay prose)."""
    spans: list[Span] = []
    for m in _PROSE_DIRECT.finditer(text, lo, hi):
        introduced = m.group(1) is not None
        if m.group(2).lower() in ("pass", "pw") and not introduced:
            continue  # "tests pass 3/4": "pass" alone is a verb
        t = _PROSE_TOKEN.match(text, m.end(), hi)
        if t is None or PLACEHOLDER_RE.match(text, t.start(2)):
            continue
        token = t.group(2).rstrip(".,;:!?)]}…")
        start, end = t.start(2), t.start(2) + len(token)
        if t.group(1):  # a quoted flag or name ("pass `-Zpublic-dependency`", "the password "password"") is none
            ok = (len(token) >= 3 and not is_placeholder_value(token) and t.group(1) != "`"
                  and not token.startswith(("-", "$")) and not is_named_value(m.group(2), token))
        else:
            core = token.strip("@#$%^&*-_=+~")  # "passwd anonymous@": a symbol at an end does not make a password
            shaped = _has_digit(core) or any(not c.isalnum() for c in core)
            strict = _has_digit(token) and (any(not c.isalnum() for c in token) or token.lower() != token)
            ok = (len(token) >= 6 and shaped and (introduced or (strict and len(token) >= 8))
                  and _CLOSING_TAG.search(token) is None
                  and _MARKUP.fullmatch(token) is None
                  and token.lower() not in _STOPWORDS and not token.startswith(("/", "~", "./", "-", "%", "{", "$"))
                  and "://" not in token and not is_code_value(text, start, end))
        if ok:
            spans.append((start, end, "password"))
    return spans


def _prose_spans(text: str, lo: int, hi: int) -> list[Span]:
    spans: list[Span] = []
    for m in _PROSE_KEY.finditer(text, lo, hi):
        if _CODE_ACCESS.match(text, m.end()) or _arn_segment(text, m.start(), m.end()):
            continue  # token.type, token(...), token[0]: a name in code; arn:aws:…:secret:Name: a segment of an ARN
        keyword = m.group(1).lower()
        strong = not keyword.startswith(("token", "credential", "secret", "api", "access"))
        kind = "pin" if keyword.startswith("pin") else _kind_from_name(keyword)
        if keyword.startswith(("wi", "wlan", "wpa", "network", "router")):
            kind = "password"  # a network's key is its password
        pos, prev, modal = m.end(), keyword, False
        for _ in range(7):  # the copula comes within a few words of the keyword
            c = _PROSE_COPULA.match(text, pos, hi)
            if c is not None:
                t = _PROSE_TOKEN.match(text, c.end(), hi)
                if t is not None:
                    token = t.group(2).rstrip(".,;:!?)]}…")
                    if PLACEHOLDER_RE.match(text, t.start(2)):
                        break
                    end = t.start(2) + len(token)
                    if t.group(1) and (is_placeholder_value(token) or (
                            not strong and key_in_code(text, m.start(1), "") and not _random_looking(token, 12))):
                        break  # {token: `passed`}: a string in code under a weak key word is a value only if random
                    if not t.group(1) and is_code_value(text, t.start(2), end, key_in_code(text, m.start(1), "")):
                        break
                    if c.group(0).strip().lower() == "to" and not _SETTING.search(text, max(lo, m.start() - 40),
                                                                                     m.start()):
                        break  # "the password to decrypt files": "to" states a value only after set/change
                    if t.group(1) and is_named_value(keyword, token):
                        break  # the password "password": a word documentation puts there
                    if (is_placeholder_value(t.group(2)) or token.startswith(("%", "{")) or _TEMPLATE.search(token)
                            or "${" in token):
                        break  # "token: %v", "is %q", "{token}", `/${name}`: a format directive stands for the value
                    if token.lower().strip("$") == keyword:
                        break  # "Credentials$ = Credentials$": the name passed on, not a value
                    if _SCHEME.match(token) and "@" not in token:
                        break  # a URL without a user part (after "token:\\n" too): where one is made, not one
                    if not strong and t.group(1) and ((token.isalpha() and len(token) < 12) or is_name(token)
                                                      or _HYPHEN_WORD.fullmatch(token)):
                        break  # "credentials: 'type' field": a quoted word under a weak key word names a field
                    if modal and not (t.group(1) or (_has_digit(token) and not token.isdigit()
                                                               and len(token) >= 6)):
                        break  # "the password must be 8 characters", "cannot be more than 72 bytes": a rule
                    if kind == "pin" and not _has_digit(token):
                        break  # a PIN is digits: "pin a host is turn on pinning", "PIN: nnn-nnn-nnn"
                    if _password_like(token, strong, bool(t.group(1))):
                        spans.append((t.start(2), t.start(2) + len(token), kind))
                        break
            w = _PROSE_WORD.match(text, pos, hi)
            if w is None or "\n" in text[pos:w.end()]:
                break
            pos, prev = w.end(), w.group(0).strip().lower()
            modal = prev in _MODALS or (modal and prev in _ADVERBS)
            if prev in _CLAUSE_BREAKS or prev.endswith((".", "!", "?", ";", ",")):
                break  # "the password when it is non-null", "credentials. Values are": another clause's copula
    for m in _ZH_KEY.finditer(text, lo, hi):
        t = _ZH_TOKEN.match(text, m.end(), hi)
        if t is None or PLACEHOLDER_RE.match(text, t.start(2)):
            continue
        token = t.group(2).rstrip(".,;:!?)]}")
        if len(token) >= 3 and token.lower() not in _STOPWORDS:
            spans.append((t.start(2), t.start(2) + len(token), "pin" if "验证码" in m.group(1) else "password"))
    return spans


def _overlaps(protected: list[tuple[int, int]], starts: list[int], start: int, end: int) -> bool:
    """Does [start, end) overlap one of the sorted, disjoint placeholder spans (a binary search, not a scan)?"""
    i = bisect.bisect_right(starts, start) - 1
    if i >= 0 and protected[i][1] > start:
        return True
    return i + 1 < len(protected) and protected[i + 1][0] < end


def _find(text: str) -> list[Span]:
    spans = _pem_spans(text) if "PRIVATE KEY" in text or "PuTTY" in text else []
    low = text.lower()
    for lo, hi in _windows(text):
        spans.extend(_line_spans(text, low, lo, hi))
    if not spans:
        return []
    protected = [m.span() for m in PLACEHOLDER_RE.finditer(text)] if "[secret:" in text else []
    starts = [p[0] for p in protected]
    # Earliest first, the longest among equal starts; drop anything overlapping a kept span or a placeholder.
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    kept: list[Span] = []
    for span in spans:
        if _overlaps(protected, starts, span[0], span[1]):
            continue
        if kept and span[0] < kept[-1][1]:
            if span[1] > kept[-1][1] and span[0] == kept[-1][0]:
                kept[-1] = span
            continue
        kept.append(span)
    return kept


def _redact_once(text: str) -> str:
    spans = _find(text)
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for start, end, kind in spans:
        out.append(text[pos:start])
        out.append(placeholder(kind, text[start:end]))
        pos = end
    out.append(text[pos:])
    return "".join(out)


# Short texts found clean, remembered: JSON keys and field values repeat in every audit row and tool record. Only
# clean texts are kept, so the per-database placeholder key plays no part; the set is emptied when full.
_CLEAN: dict[str, None] = {}
_CLEAN_MAX_LEN = 200
_CLEAN_MAX = 8192


class RedactionFailed(RuntimeError):
    """Redaction raised on a text twice (a bug, or a package that failed to load): the text may hold a secret, so
    nothing made from it may be stored or sent, and replacing it by a placeholder would lose the user's words. The
    request fails instead (JSON-RPC -32603, this message): the host keeps the turn spooled and sends it again, and
    a text that always fails ends in the spool's rejected file, still whole."""

    def __init__(self, cause: BaseException):
        super().__init__(f"secret redaction failed ({type(cause).__name__}); nothing was stored or sent, and the "
                         "request may be sent again")


def _twice(find: Callable[[str], T], text: str) -> T:
    """``find(text)``, tried a second time when it raises: a failure that passes (two threads importing
    detect-secrets' circular package at once) costs nothing; one that stays raises ``RedactionFailed``."""
    try:
        return find(text)
    except Exception:
        try:
            return find(text)
        except Exception as exc:
            raise RedactionFailed(exc) from None  # (not chained: the cause's message may quote the text)


def redact_text(text: str) -> str:
    """``text`` with every secret replaced by ``[secret:<kind>#<hash>]``; idempotent. Raises ``RedactionFailed``
    only when redaction itself fails (see there): for what is stored or sent. Logs and error messages use
    ``redact_shown``, which never raises."""
    if not text or text in _CLEAN:
        return text
    return _twice(_redact_fixpoint, text)


def _redact_fixpoint(text: str) -> str:
    out = _redact_once(text)
    if out is text and len(text) <= _CLEAN_MAX_LEN:
        if len(_CLEAN) >= _CLEAN_MAX:
            _CLEAN.clear()
        _CLEAN[text] = None
    for _ in range(4):  # a replacement can expose a neighbour to another rule: run to a fixpoint
        if out == text:
            return out
        text, out = out, _redact_once(out)
    return out


def redact_shown(text: str) -> str:
    """``redact_text`` for the last lines of defence (a log line, an error message): never raises. A text whose
    redaction fails is shown as one placeholder; nothing is stored from it."""
    try:
        return redact_text(text)
    except RedactionFailed:
        return placeholder("unscannable", text)


def secrets_in(text: str) -> list[tuple[str, str]]:
    """The secrets ``redact_text`` would replace in ``text``, as (secret, kind); ``RedactionFailed`` as there (an
    empty answer would let an import store its secrets in clear)."""
    return _twice(lambda t: [(t[a:b], kind) for a, b, kind in _find(t)], text) if text else []


def scrub_known(text: str, found: list[tuple[str, str]]) -> str:
    """``text`` with each known secret replaced wherever it occurs, also JSON-escaped (``\\u5bc6``, ``\\n``).

    For sources stored verbatim (imports): a secret the parser decoded from an escaped form is invisible to the
    rules in the raw text, but it is found in the decoded item and then removed from the raw text here."""
    for secret, kind in sorted(set(found), key=lambda f: -len(f[0])):
        if len(secret) < 4:
            continue
        mark = placeholder(kind, secret)
        for form in dict.fromkeys((secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1])):
            text = text.replace(form, mark)
    return text


# ------------------------------------------------------------------------------------------------ JSON trees

_SECRET_KEY = re.compile(
    r"password|passwd|passphrase|passcode|^pwd$|pwd$|secret|token$|^tokens?$|apikey|accesskey|privatekey|"
    r"authorization|^auth$|authkey|cookie|sessionid|sessiontoken|sessionkey|sessionsecret|credential|^pin$|"
    r"pincode|signature$|^sig$|^xapikey$|connectionstring|dsn$"
)
_NOT_SECRET_KEY = re.compile(r"tokens|tokenizer|tokentype|tokencount|tokenbudget|^max|count$|length$|ttl$|expires")


@lru_cache(maxsize=8192)
def secret_key(name: str) -> bool:
    """Is the value under this JSON key a secret (case, underscore and dash insensitive)? Cached: a tool's argument
    and result keys repeat in every record."""
    n = re.sub(r"[\s_\-.]", "", PLACEHOLDER_RE.sub("", name).lower())  # a redacted key says nothing
    return bool(_SECRET_KEY.search(n)) and not _NOT_SECRET_KEY.search(n)


def redact_value(value: Any, key: str | None = None) -> Any:
    """``value`` (a JSON-like tree) with secrets replaced; values under secret-ish keys are replaced whole."""
    if isinstance(value, dict):
        return {(redact_text(k) if isinstance(k, str) else k): redact_value(v, k if isinstance(k, str) else key)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v, key) for v in value]
    under_secret = key is not None and secret_key(key)
    if isinstance(value, str):
        if not under_secret or not value or PLACEHOLDER_RE.fullmatch(value):
            return redact_text(value)
        cleaned = redact_text(value)
        if PLACEHOLDER_RE.fullmatch(cleaned):
            return cleaned
        if key is not None and re.sub(r"[_\-]", "", key.lower()) in ("connectionstring", "dsn") and cleaned != value:
            return cleaned
        return placeholder(_kind_from_name(key or ""), value)
    if under_secret and isinstance(value, (int, float)) and not isinstance(value, bool):
        return placeholder(_kind_from_name(key or ""), str(value))
    return value
