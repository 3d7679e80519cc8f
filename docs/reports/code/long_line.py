"""Reading a corpus whose one line is huge: time and memory against its size.

Each size runs in its own subprocess (peak RSS is per process) over a file
holding one line of random words, periods and abbreviations, read the way
``data create``, ``tokenizer train`` and ``pretrain`` read it. Linear work
shows as a flat seconds-per-MB column; bounded memory as a peak that does not
grow with the line beyond the sentences kept. Not part of the test run.

    python docs/reports/code/long_line.py --sizes 2 8 50
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = """
import json, resource, sys, time
from albert_keras.data.corpus import CorpusStats, read_documents
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
sentences = chars = 0
for doc in read_documents([sys.argv[1]], layout="lines", stats=CorpusStats()):
    sentences += len(doc)
    chars += sum(map(len, doc))
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("RESULT " + json.dumps({"seconds": seconds, "sentences": sentences, "chars": chars,
                              "extra_rss_mb": (peak - base) / 1024}))
"""

_WORDS = ["alpha", "beta", "Gamma.", "delta,", "Mr.", "U.S.", "x", "!!!", "?", "end.",
          "naïve", "東京。"]


def _write_line(path, megabytes, seed=0):
    import random

    rng = random.Random(seed)
    target = megabytes * 1_000_000
    with open(path, "w", encoding="utf-8") as f:
        written = 0
        while written < target:
            block = " ".join(rng.choice(_WORDS) for _ in range(10_000)) + " "
            f.write(block)
            written += len(block.encode())
        f.write("\nA second document. With two sentences.\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 8, 16, 50],
                        help="line sizes in MB")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "long_line"))
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mb in args.sizes:
            path = os.path.join(tmp, f"{mb}.txt")
            _write_line(path, mb)
            out = subprocess.run([sys.executable, "-c", CHILD, path], capture_output=True,
                                 text=True, check=True).stdout
            row = {"mb": mb, **json.loads(out.split("RESULT ", 1)[1])}
            row["seconds_per_mb"] = row["seconds"] / mb
            rows.append(row)
            print(json.dumps(row), flush=True)
            os.remove(path)
    lines = ["| line MB | seconds | s per MB | sentences | extra peak RSS MB |",
             "|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['mb']} | {r['seconds']:.2f} | {r['seconds_per_mb']:.3f} | "
              f"{r['sentences']} | {r['extra_rss_mb']:.0f} |" for r in rows]
    from albert_keras.files import atomic_write
    from albert_keras.files import write_json

    write_json(args.out + ".json", rows)
    with atomic_write(args.out + ".md") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
