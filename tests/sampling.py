"""A bounded sample of the long parametrized checks in CI.

A test marked ``@pytest.mark.sampled(keep=N)`` runs every parameter set on a
developer's machine, and ``N`` of them when ``CI`` is set (CI runs the suite
on 2 cores within a time budget). Which ``N`` depends on the commit being
tested: the same commit always runs the same sets, so a failure reproduces,
and successive commits rotate through all of them. ``group="name"`` pools
single long tests that check the same kind of thing (say, a run on another
backend) into one rotation: ``keep`` of the whole group run each commit, the
group's marks agreeing on ``keep``. ``ALBERT_KERAS_ALL_TESTS=1``
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
    """``(kept, left_out)``, both in the collected order: of each marked test's
    parameter sets (or each group's tests), the ``keep`` whose hash with
    ``commit`` is smallest; unmarked items are all kept."""
    groups = collections.defaultdict(list)
    for item in items:
        marker = item.get_closest_marker("sampled")
        if marker is not None:
            group = marker.kwargs.get("group")
            groups[("group", group) if group else (item.path, item.originalname)].append(item)
    left = set()
    for key, members in groups.items():
        keeps = {m.get_closest_marker("sampled").kwargs.get("keep", 1) for m in members}
        if len(keeps) > 1:
            raise ValueError(f"sampled group {key[1]!r} is marked with keep={sorted(keeps)}: "
                             "give its tests one keep")
        keep = keeps.pop()
        order = sorted(members, key=lambda item: hashlib.sha256(
            f"{commit}:{item.nodeid}".encode()).hexdigest())
        left.update(id(item) for item in order[keep:])
    return ([i for i in items if id(i) not in left], [i for i in items if id(i) in left])


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
    # under pytest-xdist each worker collects and samples; the controller,
    # which prints the summary, hears of it when the worker ends (from_worker)
    if hasattr(config, "workeroutput"):
        config.workeroutput["sampled_out"] = list(config._sampled_out)


def from_worker(node):
    """Keeps the first xdist worker's sample for the controller's summary
    (every worker samples the same commit, so all agree)."""
    sampled = getattr(node, "workeroutput", {}).get("sampled_out")
    if sampled and not hasattr(node.config, "_sampled_out"):
        node.config._sampled_out = tuple(sampled)


def report(terminalreporter, config):
    commit, left_out = getattr(config, "_sampled_out", ("", []))
    if left_out:
        terminalreporter.write_sep("-", f"CI sample (commit {commit or 'unknown'}): "
                                        f"{len(left_out)} parameter sets of long checks "
                                        "left out; ALBERT_KERAS_ALL_TESTS=1 runs them")
        for nodeid in left_out:
            terminalreporter.write_line(f"left out: {nodeid}")
