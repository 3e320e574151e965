"""Real text nobody here wrote, for checking that secret redaction leaves ordinary code and logs alone.

The sample is read at run time from this machine: Python standard library modules of mixed kinds (parsers,
network clients holding words such as password, token and authkey, crypto helpers, tests of mocks), playwright-core's
own JS and TypeScript declarations (the repository's node_modules), and other languages as the machine's packages
install them (C headers of libc6-dev and libssl-dev, Perl modules, shell scripts of gzip and libc-bin, the JDK's
sources, PostgreSQL's SQL and configuration samples, dpkg's and apt's logs). ``*_sample`` are fixed subsets for the
test suite; ``whole_corpus`` is everything, for the benchmark, plus the pinned DSH's installed packages (JS and
TypeScript, when scripts/install-dsh.sh has run) and the larger corpus of open-source files kept out of git in
``~/.cache/stratagate/precision`` (when present; docs/benchmarks.md lists its repositories and commits).
"""

from __future__ import annotations

import difflib
import os
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STDLIB = Path(sysconfig.get_paths()["stdlib"])
PLAYWRIGHT_LIB = REPO / "node_modules" / "playwright-core" / "lib"

# Fixed and sorted. Chosen for the words a naive detector trips on (token, password, passwd, pwd, authkey,
# secret, key, auth, pin) in code, docstrings and grammars, plus ordinary modules of every size.
STDLIB_SAMPLE = (
    "argparse.py", "ast.py", "asyncio/base_events.py", "asyncio/selector_events.py", "asyncio/streams.py",
    "asyncio/tasks.py", "base64.py", "configparser.py", "email/_header_value_parser.py", "email/generator.py",
    "email/message.py", "email/utils.py", "ftplib.py", "getpass.py", "hashlib.py", "hmac.py", "http/client.py",
    "http/cookiejar.py", "http/server.py", "imaplib.py", "inspect.py", "json/__init__.py", "json/decoder.py",
    "json/encoder.py", "logging/__init__.py", "logging/config.py", "logging/handlers.py",
    "multiprocessing/connection.py", "multiprocessing/managers.py", "netrc.py", "nntplib.py", "pickle.py",
    "secrets.py", "shlex.py", "smtplib.py", "ssl.py", "subprocess.py", "tokenize.py", "tomllib/_parser.py",
    "typing.py", "unittest/mock.py", "urllib/parse.py", "urllib/request.py", "uuid.py", "zipfile.py",
)
# Small, readable (not minified) files of playwright-core; the minified bundles are left to the benchmark.
PLAYWRIGHT_SAMPLE = (
    "bootstrap.js", "serverRegistry.js", "server/electron/loader.js", "tools/cli-client/channelSessions.js",
    "tools/cli-client/cli.js", "tools/cli-client/minimist.js", "tools/cli-client/output.js",
    "tools/cli-client/program.js", "tools/cli-client/registry.js", "tools/cli-client/session.js",
    "tools/utils/extension.js", "tools/utils/socketConnection.js",
)

# Realistic log lines of a coding session: pytest, git, npm, pip, tracebacks, shells.
LOG_LINES = """\
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.3.4, pluggy-1.5.0 -- /work/main/.venv/bin/python
rootdir: /work/main, configfile: pyproject.toml
plugins: xdist-3.6.1, hypothesis-6.122.3, cov-6.0.0, anyio-4.7.0
tests/test_tokenizer.py::test_token_budget[max_tokens=4096] PASSED                 [ 12%]
tests/test_auth.py::test_login_rejects_wrong_password FAILED                     [ 25%]
tests/test_auth.py::test_refresh_token_rotates PASSED                            [ 37%]
E       AssertionError: assert 'expired' == 'valid'
E         - valid
E         + expired
tests/test_auth.py:88: AssertionError
FAILED tests/test_auth.py::test_login_rejects_wrong_password - KeyError: 'password'
========================= 1 failed, 41 passed, 2 skipped in 3.92s =========================
Traceback (most recent call last):
  File "/usr/lib/python3.11/asyncio/base_events.py", line 653, in run_until_complete
    return future.result()
  File "/work/main/sidecar/stratagate/rpc/server.py", line 212, in _dispatch
    token = self._tokens.get(request.session_key)
KeyError: 'session_token'
During handling of the above exception, another exception occurred:
  File "/work/main/sidecar/stratagate/auth.py", line 41, in check
    if not hmac.compare_digest(secret_key, expected_key):
TypeError: a bytes-like object is required, not 'str'
commit 5e520e9c1f0a8d3b7e2d4c6a9b8f7e6d5c4b3a21
Author: Jane Doe <jane@example.org>
Date:   Fri Dec 4 22:41:07 2026 +0000

    auth: refresh_token = rotate(refresh_token) before the access token expires
    Merge pull request #412 from acme/fix-password-reset-token
diff --git a/src/auth/session.ts b/src/auth/session.ts
index 3f2a1c9..8b7e6d5 100644
-  const token = await getToken(req.headers.authorization);
+  const token = await getToken(req.headers.authorization ?? "");
+  const apiKey = process.env.OPENAI_API_KEY;
 src/auth/password.py | 14 +++++++-------
 2 files changed, 9 insertions(+), 7 deletions(-)
npm WARN deprecated inflight@1.0.6: This module is not supported, and leaks memory.
npm WARN deprecated glob@7.2.3: Glob versions prior to v9 are no longer supported
added 214 packages, and audited 215 packages in 6s
34 packages are looking for funding
  run `npm fund` for details
found 0 vulnerabilities
npm ERR! code E401
npm ERR! Unable to authenticate, your authentication token seems to be invalid.
npm ERR! To correct this please trying logging in again with: npm login
Collecting keyring>=23.0 (from twine==5.1.1)
  Downloading keyring-25.5.0-py3-none-any.whl (39 kB)
Successfully installed SecretStorage-3.3.3 jeepney-0.8.0 keyring-25.5.0 pkginfo-1.12.0 twine-5.1.1
$ grep -rn "password" src/ | head -3
src/auth/password.py:12:def hash_password(password: str, salt: bytes) -> str:
src/auth/password.py:20:    password_hash = hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1)
src/settings.py:31:PASSWORD_MIN_LENGTH = 12
$ ls -la ~/.ssh
-rw------- 1 jane jane  411 Oct  2 09:12 id_ed25519
-rw-r--r-- 1 jane jane  101 Oct  2 09:12 id_ed25519.pub
2026-12-04T22:41:07.123Z INFO  auth.token_refresh: refreshed token for user_id=4821 in 12ms
2026-12-04T22:41:08.456Z WARN  auth.login: wrong password for user alice (attempt 2 of 5)
2026-12-04T22:41:09.789Z DEBUG cache.key: key=session:4821:prefs hit=true ttl=300
[INFO] Secret scanning found 0 secrets in 128 files
"""


# Other languages as this machine's packages install them: (language, path). A JDK's sources are read from its
# src.zip ("<zip>!<member>"). Each is real code or a real log nobody here wrote.
OTHER_SAMPLE = (
    ("c", "/usr/include/stdlib.h"), ("c", "/usr/include/unistd.h"), ("c", "/usr/include/netdb.h"),
    ("c", "/usr/include/pwd.h"), ("c", "/usr/include/shadow.h"), ("c", "/usr/include/crypt.h"),
    ("c", "/usr/include/sqlite3.h"), ("c", "/usr/include/openssl/ssl.h"), ("c", "/usr/include/openssl/evp.h"),
    ("c", "/usr/include/openssl/pem.h"), ("c", "/usr/include/openssl/x509.h"),
    ("perl", "/usr/share/perl/5.36/Net/FTP.pm"), ("perl", "/usr/share/perl/5.36/Net/SMTP.pm"),
    ("perl", "/usr/share/perl/5.36/Net/POP3.pm"), ("perl", "/usr/share/perl/5.36/Net/Netrc.pm"),
    ("perl", "/usr/share/perl/5.36/HTTP/Tiny.pm"), ("perl", "/usr/share/perl/5.36/CPAN/HTTP/Credentials.pm"),
    ("perl", "/usr/share/perl/5.36/User/pwent.pm"),
    ("shell", "/usr/bin/zgrep"), ("shell", "/usr/bin/gzexe"), ("shell", "/usr/bin/znew"), ("shell", "/usr/bin/ldd"),
    ("typescript", str(REPO / "node_modules/playwright-core/types/types.d.ts")),
    ("java", "src.zip!java.base/java/net/Authenticator.java"),
    ("java", "src.zip!java.base/java/net/PasswordAuthentication.java"),
    ("java", "src.zip!java.base/java/security/KeyStore.java"), ("java", "src.zip!java.base/javax/crypto/Cipher.java"),
    ("java", "src.zip!java.base/sun/security/provider/JavaKeyStore.java"),
    ("java", "src.zip!java.net.http/jdk/internal/net/http/AuthenticationFilter.java"),
    ("java", "src.zip!java.sql/java/sql/DriverManager.java"),
    ("sql", "/usr/share/postgresql/15/information_schema.sql"), ("sql", "/usr/share/postgresql/15/system_views.sql"),
    ("config", "/usr/share/postgresql/15/postgresql.conf.sample"),
    ("config", "/usr/share/postgresql/15/pg_hba.conf.sample"), ("config", "/etc/ssh/ssh_config"),
    ("log", "/var/log/dpkg.log"), ("log", "/var/log/apt/history.log"), ("log", "/var/log/alternatives.log"),
)
# The languages a machine of this project's kind always has (gcc's libc headers, perl, gzip, playwright-core).
REQUIRED_LANGUAGES = frozenset({"c", "perl", "shell", "typescript"})
DSH_LOCAL = Path(os.environ.get("STRATAGATE_DSH_LOCAL", Path.home() / ".cache" / "stratagate" / "dsh-local"))
PRECISION_CACHE = Path(os.environ.get("STRATAGATE_PRECISION_CACHE",
                                      Path.home() / ".cache" / "stratagate" / "precision"))
_JS_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts")


def _src_zip() -> Path | None:
    """A JDK's sources, when one is installed."""
    return next(iter(sorted(Path("/usr/lib/jvm").glob("*/lib/src.zip"), reverse=True)), None) if Path(
        "/usr/lib/jvm").is_dir() else None


def read_entry(name: str) -> str | None:
    """The text of a sample entry: a path, or ``src.zip!member`` inside the installed JDK's sources."""
    if name.startswith("src.zip!"):
        zip_path = _src_zip()
        try:
            with zipfile.ZipFile(zip_path) as z:  # type: ignore[arg-type]
                return z.read(name.split("!", 1)[1]).decode("utf-8")
        except (TypeError, OSError, KeyError, UnicodeDecodeError, zipfile.BadZipFile):
            return None
    return read(Path(name))


def other_sample() -> list[tuple[str, str, str]]:
    """(language, name, text) of every entry of ``OTHER_SAMPLE`` this machine has."""
    out = []
    for lang, name in OTHER_SAMPLE:
        text = read_entry(name)
        if text is not None:
            out.append((lang, name, text))
    return out


def stdlib_sample() -> list[Path]:
    return [STDLIB / name for name in STDLIB_SAMPLE if (STDLIB / name).is_file()]


def playwright_sample() -> list[Path]:
    return [PLAYWRIGHT_LIB / name for name in PLAYWRIGHT_SAMPLE if (PLAYWRIGHT_LIB / name).is_file()]


def whole_corpus() -> Iterator[Path]:
    """Every module of the standard library (not its test suites or third-party packages) and every JS file of
    playwright-core, sorted."""
    skip = {"site-packages", "test", "tests", "idle_test", "__pycache__"}
    yield from sorted(p for p in STDLIB.rglob("*.py") if skip.isdisjoint(p.relative_to(STDLIB).parts))
    if PLAYWRIGHT_LIB.is_dir():
        yield from sorted(PLAYWRIGHT_LIB.rglob("*.js"))


def dsh_packages() -> Iterator[Path]:
    """Every JS and TypeScript file of the pinned DSH's installed packages (each real file once; pnpm links the same
    package into several places), sorted; nothing when DSH is not installed."""
    seen: set[Path] = set()
    for sub in ("dsh", "tools"):
        root = DSH_LOCAL / sub / "node_modules"
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.suffix in _JS_SUFFIXES and path.is_file() and (real := path.resolve()) not in seen:
                seen.add(real)
                yield path


def cached_corpus() -> Iterator[tuple[str, Path]]:
    """(language, path) of every file of ``~/.cache/stratagate/precision/<language>/<owner>/<repo>/<path>``."""
    if PRECISION_CACHE.is_dir():
        for path in sorted(PRECISION_CACHE.rglob("*")):
            if path.is_file():
                yield path.relative_to(PRECISION_CACHE).parts[0], path


def machine_corpus() -> Iterator[tuple[str, str]]:
    """(language, name) of the whole of what ``OTHER_SAMPLE`` samples: the C headers of libc and OpenSSL, every Perl
    module, the JDK's network and security sources, PostgreSQL's SQL, /etc's configuration, /usr/bin's shell scripts
    and the package managers' logs."""
    include = Path("/usr/include")
    yield from (("c", str(p)) for p in sorted(include.glob("*.h")))
    for sub in ("openssl", "sys", "netinet", "arpa"):
        yield from (("c", str(p)) for p in sorted((include / sub).rglob("*.h")))
    yield from (("perl", str(p)) for p in sorted(Path("/usr/share/perl/5.36").rglob("*.p[ml]")))
    zip_path = _src_zip()
    if zip_path is not None:
        prefixes = ("java.base/java/net/", "java.base/java/security/", "java.base/javax/crypto/",
                    "java.base/sun/security/", "java.net.http/", "java.sql/", "java.naming/")
        with zipfile.ZipFile(zip_path) as z:
            names = sorted(n for n in z.namelist() if n.endswith(".java") and n.startswith(prefixes))
        yield from (("java", f"src.zip!{n}") for n in names)
    yield from (("sql", str(p)) for p in sorted(Path("/usr/share/postgresql").rglob("*.sql")))
    configs = (".conf", ".cfg", ".yaml", ".yml", ".toml", ".ini", ".sample")
    for root in (Path("/etc"), Path("/usr/share/postgresql")):
        yield from (("config", str(p)) for p in sorted(root.rglob("*")) if p.suffix in configs and p.is_file())
    for path in sorted(Path("/usr/bin").iterdir()):
        try:
            head = path.read_bytes()[:64] if path.is_file() else b""
        except OSError:
            continue
        if head.startswith(b"#!") and (b"sh\n" in head or b"bash" in head):
            yield "shell", str(path)
    yield from (("log", p) for p in ("/var/log/dpkg.log", "/var/log/apt/term.log", "/var/log/apt/history.log",
                                     "/var/log/alternatives.log"))


def read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def changed_lines(before: str, after: str, limit: int = 40) -> list[str]:
    """The lines redaction changed, as 'line N: before -> after' (the first ``limit``)."""
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    a, b = before.splitlines(), after.splitlines()
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for k, line in enumerate(a[i1:i2]):
            new = b[j1 + k] if j1 + k < j2 else ""
            out.append(f"line {i1 + k + 1}: {line.strip()[:160]!r} -> {new.strip()[:160]!r}")
    return out[:limit]


def assert_left_alone(name: str, text: str, literals: list[str]) -> None:
    """``text`` comes out of redaction unchanged but for ``literals`` (credentials it holds on purpose), each replaced:
    compared with every literal and its placeholder masked alike."""
    from stratagate.safety.secrets import PLACEHOLDER_RE, redact_text

    out = redact_text(text)
    for literal in literals:
        assert literal in text and literal not in out
    if literals:
        out = PLACEHOLDER_RE.sub("<secret>", out)
        for literal in literals:
            text = text.replace(literal, "<secret>")
    assert out == text, f"{name}: redaction altered\n" + "\n".join(changed_lines(text, out))
