"""Where the suite's time goes, by test file, at the end of the run.

``--durations`` names the slowest single tests; a file of many middling tests
can cost more than any of them, so the summary also adds up each file's
setup, call and teardown time (CI runs the suite within a time budget).
"""

import collections

_SECONDS = collections.Counter()


def record(report):
    """Adds one test phase's duration to its file's total."""
    _SECONDS[report.nodeid.split("::", 1)[0]] += report.duration


def report(terminalreporter, top=25):
    if not _SECONDS:
        return
    total = sum(_SECONDS.values())
    terminalreporter.write_sep("-", f"time by test file (top {top} of {len(_SECONDS)}, "
                                    f"{total:.0f} s in all)")
    for path, seconds in _SECONDS.most_common(top):
        terminalreporter.write_line(f"{seconds:8.1f} s {100 * seconds / total:5.1f}%  {path}")
