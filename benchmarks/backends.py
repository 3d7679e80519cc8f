"""Pretraining throughput on every Keras backend and on an accelerator.

    python benchmarks/backends.py --device gpu                  # the full table
    python benchmarks/backends.py --device cpu --shapes 2x32    # a short CPU run
    python benchmarks/backends.py --device gpu --cases ours-deberta-jax keras-hub-deberta-jax \
        hf-deberta-eager hf-deberta-compile --out benchmarks/results/backends_gpu_deberta

One optimizer step (AdamW, bf16 mixed precision unless ``--precision
float32``) of ALBERT-base-shaped pretraining on random ids, each case in a
fresh subprocess. Keras cases
time ``fit`` over ``--steps`` batches in one compiled loop
(``steps_per_execution``), as a user trains: median of ``--repeats`` fits
after an untimed one. The torch cases time single steps (median over
``--steps`` after ``--warmup``); torch has no per-step host round trip to
hide. Tokens/s, then:

* ``ours-jax`` / ``ours-torch`` / ``ours-tensorflow``: ``EncoderPretrainer``
  (MLM on 20 positions + SOP) on that Keras backend. On JAX its attention is
  ``keras.ops.dot_product_attention``, which takes cuDNN's fused kernel on
  an NVIDIA GPU; the child reports whether Keras logged a fallback.
* ``ours-rtd-jax``: ELECTRA's replaced-token detection on the same
  discriminator (``ElectraPretrainer``, a generator of 1/4 the width,
  tied embeddings); its note gives its step cost against ``ours-jax``.
* ``keras-hub-jax``: keras-hub's ``AlbertMaskedLM`` (MLM only).
* ``hf-eager`` / ``hf-compile``: transformers' ``AlbertForPreTraining`` under
  ``torch.autocast(bfloat16)``, eager and with ``torch.compile``.
* The DeBERTa speed case, DeBERTa-v3-base's shape (E = H = 768, no sharing,
  relative attention over 256 buckets, shared position keys), masked LM on
  the same 20 positions: ``ours-deberta-<backend>`` (``EncoderPretrainer``
  without SOP), ``keras-hub-deberta-jax`` (keras-hub's ``DebertaV3MaskedLM``)
  and ``hf-deberta-eager`` / ``hf-deberta-compile`` (``DebertaV2ForMaskedLM``).
  Its rows are compared with each other only, and get no MFU (the FLOP count
  is ALBERT's).
* The MobileBERT speed case, ``google/mobilebert-uncased``'s shape (24
  bottleneck blocks, 512 between blocks, 128 inside, four FFNs, trigram
  input, NoNorm, relu), masked LM on the same 20 positions:
  ``ours-mobilebert-<backend>`` (``EncoderPretrainer`` on ``MobileBertEncoder``,
  without SOP) and ``hf-mobilebert-eager`` / ``hf-mobilebert-compile``
  (``MobileBertForMaskedLM``); keras-hub has no MobileBERT. Compared with
  each other only, no MFU.

MFU uses one FLOP count for everyone (the standard training count: 3x the
forward matmuls of every layer at every position, plus the MLM head on the
masked positions) against a bf16 matmul peak measured in the same run, so
MFU ratios equal throughput ratios. Peak memory is the accelerator's
high-water mark (JAX ``memory_stats``, ``torch.cuda.max_memory_allocated``),
or the process's peak RSS on CPU.

A case that cannot run on this machine (TensorFlow is not installed on the
GPU machines we measure on) is recorded with its error, not dropped.
Results go to ``benchmarks/results/backends_<device>.json`` and ``.md``,
written as each case finishes.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# the sibling helper module, also when this file is imported by path
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import PREDICTIONS  # noqa: E402  (benchmarks/ is the script's folder)
from common import VOCAB  # noqa: E402
from common import cpu_with_features  # noqa: E402
from common import run_child  # noqa: E402
from common import training_flops_per_token  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")

# ALBERT-base: hidden, embedding, layers, heads, intermediate.
BASE = (768, 128, 12, 12, 3072)
CASES = ("ours-jax", "keras-hub-jax", "hf-eager", "hf-compile", "ours-torch",
         "ours-tensorflow", "ours-rtd-jax")
DEBERTA_CASES = ("ours-deberta-jax", "keras-hub-deberta-jax", "hf-deberta-eager",
                 "hf-deberta-compile", "ours-deberta-torch", "ours-deberta-tensorflow")
MOBILEBERT_CASES = ("ours-mobilebert-jax", "hf-mobilebert-eager", "hf-mobilebert-compile",
                    "ours-mobilebert-torch", "ours-mobilebert-tensorflow")

# -- the child: one case, one process -------------------------------------------------
CHILD = r"""
import json, logging, os, resource, sys, time
args = json.loads(sys.argv[1])
who, B, S = args["who"], args["batch"], args["seq"]
family = args["family"]  # albert, deberta or mobilebert
H, E, L, A, I = args["base"]
V, P = args["vocab"], args["predictions"]
gpu = args["device"] == "gpu"
if who.endswith(("-jax", "-torch", "-tensorflow")):
    os.environ["KERAS_BACKEND"] = who.rsplit("-", 1)[1]
import numpy as np
rng = np.random.default_rng(0)
ids = rng.integers(5, V, (B, S)).astype("int32")
positions = np.sort(rng.integers(1, S, (B, P)), axis=1).astype("int32")
labels = rng.integers(5, V, (B, P)).astype("int32")
times, fallbacks = [], []

class Catch(logging.Handler):  # Keras logs, and goes on, when cuDNN refuses
    def emit(self, record):
        fallbacks.append(record.getMessage()[:160])
logging.getLogger().addHandler(Catch(level=logging.WARNING))

if who.startswith("hf"):
    import torch, transformers
    torch.manual_seed(0)
    dev = "cuda" if gpu else "cpu"
    if family == "deberta":
        config = transformers.DebertaV2Config(vocab_size=V, hidden_size=H,
            num_hidden_layers=L, num_attention_heads=A, intermediate_size=I,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
            relative_attention=True, position_buckets=256, pos_att_type=["p2c", "c2p"],
            share_att_key=True, norm_rel_ebd="layer_norm", position_biased_input=False,
            type_vocab_size=0, max_position_embeddings=512)
        model = transformers.DebertaV2ForMaskedLM(config).to(dev)
    elif family == "mobilebert":  # google/mobilebert-uncased's shape: the config's defaults
        config = transformers.MobileBertConfig(vocab_size=V, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0)
        model = transformers.MobileBertForMaskedLM(config).to(dev)
    else:
        config = transformers.AlbertConfig(vocab_size=V, embedding_size=E, hidden_size=H,
            num_hidden_layers=L, num_attention_heads=A, intermediate_size=I,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        model = transformers.AlbertForPreTraining(config).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    mlm = torch.full((B, S), -100, dtype=torch.long)
    mlm.scatter_(1, torch.tensor(positions, dtype=torch.long), torch.tensor(labels, dtype=torch.long))
    x = dict(input_ids=torch.tensor(ids, dtype=torch.long),
             token_type_ids=torch.zeros((B, S), dtype=torch.long),
             attention_mask=torch.ones((B, S), dtype=torch.long),
             labels=mlm, sentence_order_label=torch.zeros((B,), dtype=torch.long))
    if family != "albert":  # MLM only
        del x["sentence_order_label"]
    if family == "deberta":  # no segments
        del x["token_type_ids"]
    x = {k: v.to(dev) for k, v in x.items()}
    def loss_fn(x):
        with torch.autocast(dev, dtype=torch.bfloat16,
                            enabled=args["precision"] == "mixed_bfloat16"):
            return model(**x).loss
    if who.startswith("hf") and who.endswith("compile"):
        loss_fn = torch.compile(loss_fn)
    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(x).backward()
        opt.step()
        if gpu:
            torch.cuda.synchronize()
    def peak_memory():
        return torch.cuda.max_memory_allocated() if gpu else None
    per_call = 1
else:
    import keras
    keras.mixed_precision.set_global_policy(args["precision"])
    x = {"token_ids": ids, "segment_ids": np.zeros((B, S), "int32"),
         "padding_mask": np.ones((B, S), "int32")}
    if who.startswith("ours"):
        from albert_keras import AlbertConfig, AlbertEncoder, DebertaConfig, EncoderPretrainer
        config = AlbertConfig(vocab_size=V, embedding_size=E, hidden_size=H,
                              num_hidden_layers=L, num_attention_heads=A, intermediate_size=I,
                              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        if family == "deberta":  # DeBERTa-v3-base's layout
            config = DebertaConfig.extending(
                config.replace(embedding_size=H, num_hidden_groups=L, sharing="none",
                               type_vocab_size=0, hidden_act="gelu", pooler_hidden_act="gelu"),
                relative_attention=True, position_buckets=256, pos_att_type="p2c|c2p",
                share_att_key=True, norm_rel_ebd="layer_norm", position_biased_input=False)
        y = {"masked_ids": labels, "masked_weights": np.ones((B, P), "float32"),
             "sop_label": np.zeros((B,), "int32")}
        x["masked_positions"] = positions
        if "-rtd-" in who:
            # ELECTRA on the same discriminator: a generator of 1/4 its width
            # fills the masked positions by sampling, the discriminator reads
            # every token; the generator's targets are inputs too
            from albert_keras.models.pretrainers.electra_pretrainer import (
                ElectraPretrainer, generator_config)
            model = ElectraPretrainer(AlbertEncoder(config),
                                            AlbertEncoder(generator_config(config, 0.25)))
            x.update(masked_ids=labels, masked_weights=y["masked_weights"])
        elif family == "mobilebert":  # google/mobilebert-uncased's shape
            import dataclasses
            from albert_keras import MobileBertEncoder
            from albert_keras.presets import get_preset
            model = EncoderPretrainer(MobileBertEncoder(dataclasses.replace(
                get_preset("mobilebert"), vocab_size=V, hidden_dropout_prob=0.0,
                attention_probs_dropout_prob=0.0)), sentence_order=False)
        else:
            model = EncoderPretrainer(AlbertEncoder(config), sop_dropout=0.0,
                                     sentence_order=family == "albert")
        # torch's Keras trainer takes one step per execution only
        per_execution = 1 if keras.backend.backend() == "torch" else args["steps"]
        model.compile(optimizer=keras.optimizers.AdamW(1e-4),
                      steps_per_execution=per_execution)
        sample_weight = None
    else:
        import keras_hub
        if family == "deberta":
            backbone = keras_hub.models.DebertaV3Backbone(vocabulary_size=V, num_layers=L,
                num_heads=A, hidden_dim=H, intermediate_dim=I, dropout=0.0,
                max_sequence_length=512, bucket_size=256)
            model = keras_hub.models.DebertaV3MaskedLM(backbone)
            del x["segment_ids"]
        else:
            backbone = keras_hub.models.AlbertBackbone(vocabulary_size=V, num_layers=L,
                num_heads=A, embedding_dim=E, hidden_dim=H, intermediate_dim=I, dropout=0.0)
            model = keras_hub.models.AlbertMaskedLM(backbone)
        model.compile(optimizer=keras.optimizers.AdamW(1e-4),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      weighted_metrics=[], steps_per_execution=args["steps"])
        x["mask_positions"] = positions
        y, sample_weight = labels, np.ones((B, P), "float32")
    # A user trains with fit, which runs ``steps`` steps in one compiled
    # loop (steps_per_execution); train_on_batch would add a host round trip
    # per step. Each "step" below is one fit of ``steps`` batches.
    n = args["steps"]
    tile = lambda t: np.concatenate([t] * n)
    xs, ys = keras.tree.map_structure(tile, x), keras.tree.map_structure(tile, y)
    ws = None if sample_weight is None else tile(sample_weight)
    # keras-hub's Task.fit routes data through its preprocessing, which needs
    # tf.data or grain; Model.fit is the same training loop without it.
    step = lambda: keras.Model.fit(model, xs, ys, sample_weight=ws, batch_size=B, epochs=1,
                                   verbose=0, shuffle=False)
    per_call = n
    def peak_memory():
        backend = keras.backend.backend()
        if gpu and backend == "jax":
            import jax
            return jax.devices()[0].memory_stats().get("peak_bytes_in_use")
        if gpu and backend == "torch":
            import torch
            return torch.cuda.max_memory_allocated()
        return None
calls = args["warmup"] + args["steps"] if per_call == 1 else 1 + args["repeats"]
for i in range(calls):
    t = time.perf_counter()
    step()
    times.append((time.perf_counter() - t) / per_call)
times = times[args["warmup"]:] if per_call == 1 else times[1:]
memory = peak_memory()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print("RESULT " + json.dumps({"times": times,
    "peak_bytes": memory if memory is not None else rss,
    "memory_kind": "device" if memory is not None else "rss",
    "fallbacks": sorted(set(f for f in fallbacks if "cudnn" in f.lower()
                            or "fall" in f.lower()))[:3]}))
"""

PEAK_CHILD = r"""
import json, sys, time
gpu = sys.argv[1] == "gpu"
import torch
n = 8192 if gpu else 1024
dev = "cuda" if gpu else "cpu"
best = 0.0
# On a CPU, bf16 through torch can be slower than float32: take the faster.
for dtype in (torch.bfloat16,) if gpu else (torch.bfloat16, torch.float32):
    a = torch.randn(n, n, device=dev, dtype=dtype)
    b = torch.randn(n, n, device=dev, dtype=dtype)
    def run():
        c = a @ b
        if gpu:
            torch.cuda.synchronize()
    for _ in range(3):
        run()
    times = []
    for _ in range(10):
        t = time.perf_counter(); run(); times.append(time.perf_counter() - t)
    best = max(best, 2 * n ** 3 / sorted(times)[len(times) // 2])
print("RESULT " + json.dumps({"flops": best}))
"""


def model_flops_per_token(seq):
    """Training FLOPs per token of ALBERT-base pretraining."""
    H, E, L, _, FFN = BASE
    return training_flops_per_token(H, E, L, FFN, seq)


def render(results):
    peak = results.get("matmul_peak_flops")
    precision = results.get("args", {}).get("precision", "mixed_bfloat16")
    lines = [(f"Device: {results['machine']}; measured matmul peak "
              f"{peak / 1e12:.3g} TFLOP/s" if peak else f"Device: {results['machine']}")
             + f"; {precision}", "",
             "| batch x seq | case | tokens/s | vs best peer | MFU | peak memory GiB | note |",
             "|---|---|---:|---:|---:|---:|---|"]
    rows = results["rows"]
    for r in rows:
        shape = f"{r['batch']}x{r['seq']}"
        if "error" in r:
            lines.append(f"| {shape} | {r['who']} | - | - | - | - | {r['error'][:80]} |")
            continue
        family = _family(r["who"])  # each family's rows are compared with each other
        peers = [p["tokens_per_s"] for p in rows if "tokens_per_s" in p
                 and not p["who"].startswith("ours") and (p["batch"], p["seq"]) ==
                 (r["batch"], r["seq"]) and _family(p["who"]) == family]
        vs = (f"{r['tokens_per_s'] / max(peers):.2f}x" if peers and "-rtd-" not in r["who"]
              else "-")
        # the FLOP count is MLM's; the rtd case's extra generator work is not
        # in it, and its peers train another objective, so its MFU and "vs
        # best peer" would mislead: it gets its step cost against ours
        # (mlm_sop) on the same backend and shape instead
        mfu = (f"{100 * model_flops_per_token(r['seq']) * r['tokens_per_s'] / peak:.1f}%"
               if peak and "-rtd-" not in r["who"] and family == "albert" else "-")
        memory = f"{r['peak_bytes'] / 2 ** 30:.1f}" + (" (RSS)" if r["memory_kind"] == "rss"
                                                        else "")
        note = "; ".join(r.get("fallbacks") or [])
        if "-rtd-" in r["who"]:
            same = [p["tokens_per_s"] for p in rows if "tokens_per_s" in p and p["who"] ==
                    r["who"].replace("-rtd", "") and (p["batch"], p["seq"]) ==
                    (r["batch"], r["seq"])]
            if same:
                note = f"step cost {same[0] / r['tokens_per_s']:.2f}x ours (mlm_sop); " + note
        lines.append(f"| {shape} | {r['who']} | {r['tokens_per_s']:,.0f} | {vs} | {mfu} | "
                     f"{memory} | {note[:80]} |")
    return "\n".join(lines) + "\n"


def _family(who):
    """``deberta``, ``mobilebert`` or ``albert``: whose speed case a row is."""
    return next((f for f in ("deberta", "mobilebert") if f"-{f}-" in who or
                 who.endswith(f"-{f}")), "albert")


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["gpu", "cpu"], default="gpu",
                        help="where the cases run (default: gpu)")
    parser.add_argument("--shapes", nargs="+", default=["32x128", "128x128", "32x512",
                                                        "128x512"],
                        help="batch x seq pairs (default: 32x128 128x128 32x512 128x512)")
    parser.add_argument("--cases", nargs="+", default=list(CASES),
                        choices=CASES + DEBERTA_CASES + MOBILEBERT_CASES,
                        help="what to run (default: the ALBERT cases; the DeBERTa speed "
                             "case is " + " ".join(DEBERTA_CASES) + ", MobileBERT's "
                             + " ".join(MOBILEBERT_CASES) + ")")
    parser.add_argument("--steps", type=int, default=10, help="timed steps (default: 10)")
    parser.add_argument("--warmup", type=int, default=3,
                        help="untimed steps first, compilation included (default: 3)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed fits of --steps batches for the Keras cases, after one "
                             "untimed fit (default: 3)")
    parser.add_argument("--precision", choices=["mixed_bfloat16", "float32"],
                        default="mixed_bfloat16",
                        help="float32: every case without bf16 (Keras' float32 policy, no "
                             "torch.autocast); on CPUs, where the backends' compilers differ "
                             "most in bf16 (default: mixed_bfloat16)")
    parser.add_argument("--timeout", type=int, default=300,
                        help="seconds one case may take (default: 300)")
    parser.add_argument("--out", default=None,
                        help="results stem (default: benchmarks/results/backends_<device>)")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds for the whole run: a case that would start after them "
                             "is recorded as skipped (default: no limit)")
    args = parser.parse_args(argv)
    started = time.monotonic()

    stem = args.out or os.path.join(RESULTS, f"backends_{args.device}")
    os.makedirs(os.path.dirname(stem) or ".", exist_ok=True)
    peak = run_child(PEAK_CHILD, args.device, timeout=args.timeout).get("flops")
    results = {"machine": _machine(args.device), "matmul_peak_flops": peak,
               "args": vars(args), "rows": []}
    for shape in args.shapes:
        batch, seq = (int(v) for v in shape.lower().split("x"))
        for who in args.cases:
            spec = {"who": who, "family": _family(who), "batch": batch, "seq": seq,
                    "base": BASE, "vocab": VOCAB,
                    "predictions": PREDICTIONS, "steps": args.steps, "warmup": args.warmup,
                    "repeats": args.repeats, "device": args.device,
                    "precision": args.precision}
            left = args.timeout if args.budget is None else min(
                args.timeout, args.budget - (time.monotonic() - started))
            out = (run_child(CHILD, json.dumps(spec), timeout=left) if left > 0 else
                   {"error": f"skipped: the --budget of {args.budget:g} s was spent"})
            row = {"who": who, "batch": batch, "seq": seq}
            if "error" in out:
                row["error"] = out["error"]
            else:
                row.update(tokens_per_s=batch * seq / statistics.median(out["times"]),
                           peak_bytes=out["peak_bytes"], memory_kind=out["memory_kind"],
                           fallbacks=out["fallbacks"])
            results["rows"].append(row)
            print(json.dumps(row), flush=True)
            _write(stem + ".json", json.dumps(results, indent=2))
            _write(stem + ".md", render(results))
    print(render(results))
    return results


def _machine(device):
    if device == "gpu":
        try:
            return subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                  capture_output=True, text=True).stdout.strip() or "gpu"
        except OSError:
            return "gpu"
    return f"{cpu_with_features()}, {os.cpu_count()} cores"


if __name__ == "__main__":
    main()
