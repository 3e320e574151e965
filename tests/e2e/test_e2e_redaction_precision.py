"""Secret redaction leaves the pinned DSH's own installed packages byte-identical: a fixed sample of their JS and
TypeScript (model SDK clients, OAuth and JWT code, AWS credential providers and request signing, MCP's auth, schema
validators), read from the install this lane makes. The benchmark (bench/bench_redaction.py) runs every file of them;
the unit lane's sample (tests/test_redaction_precision.py) cannot, since DSH installs beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.dsh import DshInstall
from support.precision_sample import assert_left_alone

# Package-relative paths; the lockfile pins their versions. Each holds words such as token, secret, password, key,
# credential or authorization in code, comments and types.
SAMPLE = (
    "openai/client.js", "openai/core/api-promise.js", "openai/resources/beta/realtime/sessions.d.ts",
    "@anthropic-ai/sdk/client.js", "@anthropic-ai/sdk/resources/messages/messages.d.ts",
    "google-auth-library/build/src/auth/oauth2client.js", "google-auth-library/build/src/auth/googleauth.js",
    "google-auth-library/build/src/auth/jwtclient.js", "@aws-sdk/credential-provider-ini/dist-cjs/index.js",
    "@aws-sdk/core/dist-cjs/index.js", "@smithy/signature-v4/dist-cjs/index.js", "hono/dist/utils/jwt/jwt.js",
    "hono/dist/middleware/basic-auth/index.js", "@modelcontextprotocol/sdk/dist/cjs/client/auth.js",
    "@modelcontextprotocol/sdk/dist/esm/server/auth/handlers/token.js", "semver/classes/range.js",
    "zod/v4/core/regexes.js", "ajv/dist/compile/index.js", "yaml/dist/compose/composer.js",
)
# The sample's only credentials: a literal example password in a doc comment (rightly replaced; nothing else is).
KNOWN_LITERALS = {"hono/dist/middleware/basic-auth/index.js": ["ahotproject"]}


def _find(dest: Path, relative: str) -> Path:
    for sub in ("dsh", "tools"):
        hits = sorted((dest / sub / "node_modules" / ".pnpm").glob(f"*/node_modules/{relative}"))
        if hits:
            return hits[-1]
    raise AssertionError(f"{relative} is not in the pinned DSH's packages under {dest}")


@pytest.mark.parametrize("relative", SAMPLE)
def test_dsh_packages_are_left_byte_identical(dsh_install: DshInstall, relative: str) -> None:
    text = _find(dsh_install.dest, relative).read_text(encoding="utf-8")
    assert len(text) > 2000
    assert_left_alone(relative, text, KNOWN_LITERALS.get(relative, []))
