"""``python -m stratagate`` and the ``stratagate`` script: the command line, where Ctrl-C ends quietly (exit 130), also
while the modules are still loading (a traceback there tells a user nothing)."""

import sys


def run() -> int:
    try:
        from stratagate.cli import main

        return main()
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(run())
