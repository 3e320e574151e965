"""Secret redaction leaves ordinary code and logs byte-identical: a fixed sample of real source nobody here wrote
(the Python standard library of this machine, playwright-core's JS when node_modules is installed) and realistic
log lines must come back from ``redact_text`` unchanged. The recall side is tests/test_secrets.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from stratagate.safety.secrets import PLACEHOLDER_RE, redact_text
from support.precision_sample import LOG_LINES, changed_lines, playwright_sample, read, stdlib_sample


def test_the_sample_is_real_and_large() -> None:
    files = stdlib_sample()
    assert len(files) >= 40
    assert sum(p.stat().st_size for p in files) >= 1_000_000


def _ids(paths: list[Path]) -> list[str]:
    return [p.name if p.parent.name in ("lib", "python3.11") else f"{p.parent.name}/{p.name}" for p in paths]


# The sample's only credentials: a literal password in a docstring's example (rightly replaced; nothing else is).
KNOWN_LITERALS = {"request.py": ["geheim$parole"]}


@pytest.mark.parametrize("path", stdlib_sample() + playwright_sample(),
                         ids=_ids(stdlib_sample() + playwright_sample()))
def test_real_source_is_left_byte_identical(path: Path) -> None:
    text = read(path)
    assert text is not None, f"{path} is not UTF-8 text"
    out = redact_text(text)
    literals = KNOWN_LITERALS.get(path.name, [])
    for literal in literals:
        assert literal in text and literal not in out
    if literals:  # compare with each replaced literal and its placeholder masked alike
        out = PLACEHOLDER_RE.sub("<secret>", out)
        for literal in literals:
            text = text.replace(literal, "<secret>")
    assert out == text, f"{path}: redaction altered\n" + "\n".join(changed_lines(text, out))


def test_log_lines_are_left_byte_identical() -> None:
    out = redact_text(LOG_LINES)
    assert out == LOG_LINES, "redaction altered\n" + "\n".join(changed_lines(LOG_LINES, out))
    for line in LOG_LINES.splitlines():  # alone too: a shorter text is scanned as one window
        assert redact_text(line) == line
