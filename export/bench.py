"""``albert-keras export bench``: size, latency and peak memory of a ``.tflite``.

Latency is the median of ``runs`` invocations after ``warmup`` ones, at a
given thread count, batch 1. Peak memory is the process's resident-set
high-water mark after loading and running the model, measured in a fresh
subprocess so that nothing else (TensorFlow, other models) is counted.
"""

import json
import os
import subprocess
import sys
import time

import numpy as np

SAMPLE_TEXT = ("The union is strong, and the state of our economy is the envy of the world; "
               "we will keep working for every family in every community.")


def sample_feed(details):
    """Inputs for a signature's ``get_input_details()``: the sample text, or
    small valid ids."""
    feed = {}
    for name, d in details.items():
        if d["dtype"] == np.bytes_ or d["dtype"] == np.object_:
            feed[name] = SAMPLE_TEXT
        else:
            shape = tuple(int(x) for x in d["shape"])
            value = np.ones(shape, dtype=d["dtype"])
            if name == "ids":
                # Small ids, valid for any vocabulary.
                value = np.random.default_rng(0).integers(5, 25, shape).astype(d["dtype"])
            if name == "segment_ids":
                value = np.zeros(shape, dtype=d["dtype"])
            feed[name] = value
    return feed


def measure(path, runs=50, threads=2, warmup=5):
    """Latency in this process: ``{"median_ms", "p90_ms", "runs", "threads"}``."""
    times = _timed_runs([path], runs, threads, warmup)[0]
    return {"median_ms": float(np.median(times)), "p90_ms": float(np.percentile(times, 90)),
            "runs": runs, "threads": threads}


def measure_interleaved(paths, runs=50, threads=2, warmup=5):
    """Median ms of each model, invoked in turn (A, B, A, B, ...) in one process.

    On a shared, noisy machine the speed drifts over seconds; alternating
    the models gives each the same conditions, so their ratio is fair where
    back-to-back runs are not.
    """
    return [float(np.median(t)) for t in _timed_runs(paths, runs, threads, warmup)]


def _timed_runs(paths, runs, threads, warmup):
    """Per model, ``runs`` invocation times in ms, the models taking turns."""
    from albert_keras.export.runtime import TFLiteRunner

    runners = [TFLiteRunner(path, num_threads=threads) for path in paths]
    feeds = [sample_feed(runner.runner.get_input_details()) for runner in runners]
    for runner, feed in zip(runners, feeds):
        for _ in range(warmup):
            runner(feed)
    times = [[] for _ in paths]
    for _ in range(runs):
        for runner, feed, model_times in zip(runners, feeds, times):
            start = time.perf_counter()
            runner(feed)
            model_times.append((time.perf_counter() - start) * 1000.0)
    return times


def _child(path, runs, threads, warmup):
    import resource

    import albert_keras.export.runtime  # noqa: F401  (imports TF and tf-text first)

    # ru_maxrss is in KiB on Linux; what the runtime imports cost is
    # measured first, so the model's own share can be told apart.
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    result = measure(path, runs, threads, warmup)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    result["model_peak_mb"] = result["peak_rss_mb"] - before
    print("BENCH " + json.dumps(result))


def bench(path, runs=50, threads=2, warmup=5):
    """Size, median latency and peak memory of ``path``."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such .tflite file")
    code = ("import sys; from albert_keras.export.bench import _child; "
            f"_child({path!r}, {int(runs)}, {int(threads)}, {int(warmup)})")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    line = next((x for x in done.stdout.splitlines() if x.startswith("BENCH ")), None)
    if done.returncode or line is None:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{path}: benchmark failed: {last}")
    result = json.loads(line[len("BENCH "):])
    result["size_mb"] = os.path.getsize(path) / 1e6
    result["path"] = path
    return result
