"""A bounded sample of the long parametrized checks in CI.

A test marked ``@pytest.mark.sampled(keep=N)`` runs every parameter set on a
developer's machine, and ``N`` of them when ``CI`` is set (CI runs the suite
on 2 cores within a time budget). Which ``N`` depends on the commit being
tested: the same commit always runs the same sets, so a failure reproduces,
and successive commits rotate through all of them. ``ALBERT_KERAS_ALL_TESTS=1``
runs every set under CI too. The sets left out are listed at the end of the
run, never skipped silently.
"""

import collections
import hashlib
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _commit():
    """The checked-out commit, or "" outside a git checkout."""
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def sampling_applies():
    return bool(os.environ.get("CI")) and not os.environ.get("ALBERT_KERAS_ALL_TESTS")


def choose(items, commit):
    """``(kept, left_out)``: of each marked test's parameter sets, the ``keep``
    whose hash with ``commit`` is smallest; unmarked items are all kept."""
    groups = collections.defaultdict(list)
    kept, left_out = [], []
    for item in items:
        marker = item.get_closest_marker("sampled")
        if marker is None:
            kept.append(item)
        else:
            groups[(item.path, item.originalname)].append((item, marker.kwargs.get("keep", 1)))
    chosen = set()
    for members in groups.values():
        keep = members[0][1]
        order = sorted(members, key=lambda m: hashlib.sha256(
            f"{commit}:{m[0].nodeid}".encode()).hexdigest())
        chosen.update(id(item) for item, _ in order[:keep])
    for members in groups.values():
        for item, _ in members:
            (kept if id(item) in chosen else left_out).append(item)
    # the original order, so module fixtures are set up as often as before
    position = {id(item): i for i, item in enumerate(items)}
    kept.sort(key=lambda item: position[id(item)])
    return kept, left_out


def sample(config, items):
    """Deselects the sets CI leaves out this commit; remembers them for the summary."""
    if not sampling_applies():
        return
    commit = _commit()
    kept, left_out = choose(items, commit)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept
    config._sampled_out = (commit[:12], [item.nodeid for item in left_out])


def report(terminalreporter, config):
    commit, left_out = getattr(config, "_sampled_out", ("", []))
    if left_out:
        terminalreporter.write_sep("-", f"CI sample (commit {commit or 'unknown'}): "
                                        f"{len(left_out)} parameter sets of long checks "
                                        "left out; ALBERT_KERAS_ALL_TESTS=1 runs them")
        for nodeid in left_out:
            terminalreporter.write_line(f"left out: {nodeid}")
