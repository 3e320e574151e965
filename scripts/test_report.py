"""The test run's closing report: the slowest tests across the pytest lanes, and coverage against its floor.

    python scripts/test_report.py --floor .ci/coverage-floor .test-out/unit.xml .test-out/host.xml

Reads pytest's JUnit XML files (missing ones are skipped: a lane that did not run) and the combined coverage data of
the run (.coverage, written by pytest-cov). Exits 1 when the total coverage is below the floor: the floor is the
coverage the suite had when it was first measured in CI, and it only moves up.
"""

from __future__ import annotations

import argparse
import io
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SLOWEST = 25


def durations(files: list[Path]) -> list[tuple[float, str]]:
    """(seconds, test id) of every test case in the JUnit files, slowest first."""
    cases: list[tuple[float, str]] = []
    for file in files:
        if not file.is_file():
            continue
        for case in ET.parse(file).getroot().iter("testcase"):
            name = f"{case.get('classname', '')}::{case.get('name', '')}".strip(":")
            cases.append((float(case.get("time") or 0.0), name))
    return sorted(cases, reverse=True)


def coverage_total() -> float:
    """Total statement+branch coverage of the combined data, as `coverage report` computes it."""
    import coverage

    cov = coverage.Coverage()
    cov.load()
    return float(cov.report(file=io.StringIO()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--floor", type=Path, required=True, help="file holding the minimum total coverage (percent)")
    parser.add_argument("junit", nargs="*", type=Path, help="pytest --junitxml files")
    args = parser.parse_args(argv)

    cases = durations(args.junit)
    print(f"-- the {SLOWEST} slowest of {len(cases)} tests (seconds, wall, on a worker)")
    for seconds, name in cases[:SLOWEST]:
        print(f"{seconds:8.1f}  {name}")
    print(f"   all tests together: {sum(s for s, _ in cases):.0f} s of worker time")

    floor = float(args.floor.read_text().split()[0])
    total = coverage_total()
    print(f"-- coverage of sidecar/stratagate: {total:.2f} % (floor {floor:.2f} %, in {args.floor})")
    if total + 1e-9 < floor:
        print(f"coverage fell below the floor by {floor - total:.2f} points", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
