"""The `nbtext` executable: one message through `predict` or `filter` starts without click
(nbtext.oneshot); every other command line goes to nbtext.cli."""

import sys


def main():
    from nbtext.oneshot import fast

    status = fast(sys.argv[1:])
    if status is None:
        from nbtext.cli import main as full

        full()
    sys.exit(status)
