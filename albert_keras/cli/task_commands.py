"""``finetune``, ``evaluate``, ``predict``, ``fill-mask`` and ``embed``."""

import argparse
import json
import logging
import os
import sys
import tempfile

from albert_keras.cli.flags import CliError
from albert_keras.cli.flags import add_flags
from albert_keras.cli.flags import config_from_args
from albert_keras.files import atomic_path
from albert_keras.files import atomic_write
from albert_keras.files import check_output


def _add_selection_flags(p):
    """``--eval`` and ``--validation``, as finetune and distill share them."""
    p.add_argument("--eval", default=None,
                   help="a labelled file scored after training; without --validation or "
                   "--validation-split it is also scored every epoch and the best epoch is "
                   "kept")
    p.add_argument("--validation", default=None,
                   help="a labelled file the best epoch is chosen on; --eval is then scored "
                   "once, with the chosen weights")


def _print_metrics(metrics):
    shown = {k: v for k, v in metrics.items() if k not in ("confusion_matrix", "per_type")}
    print(json.dumps(shown, indent=2, sort_keys=True))


def cmd_finetune(args):
    from albert_keras.drivers.finetune import finetune
    from albert_keras.tasks.finetune_config import FinetuneConfig

    metrics = finetune(args.init, args.train, args.eval, args.out,
                       config_from_args(FinetuneConfig, args),
                       tokenizer=args.tokenizer, overwrite=args.overwrite,
                       validation_path=args.validation)
    _print_metrics(metrics)
    print(f"model folder: {args.out}")
    return 0


def cmd_distill(args):
    from albert_keras.drivers.distill import distill
    from albert_keras.drivers.distill_config import DistillConfig

    metrics = distill(args.teacher, args.train, args.eval, args.out,
                      config_from_args(DistillConfig, args), unlabeled=args.unlabeled,
                      overwrite=args.overwrite, validation_path=args.validation)
    _print_metrics(metrics)
    print(f"model folder: {args.out}")
    return 0


def cmd_shrink(args):
    from albert_keras.drivers.shrink import shrink
    from albert_keras.drivers.shrink_config import ShrinkConfig

    result = shrink(args.teacher, args.train, args.eval, args.out,
                    config_from_args(ShrinkConfig, args), unlabeled=args.unlabeled)
    with open(os.path.join(args.out, "shrink.md"), encoding="utf-8") as f:
        print(f.read(), end="")
    best = result["recommended"]
    print(f"recommended: {os.path.join(args.out, 'recommended.tflite')} "
          f"({best['candidate']}, {best['mode']})" if best else "nothing recommended")
    if best and "slower_than_float_ms" in best:
        print(f"  it is slower than {best['candidate']}'s float file on this CPU "
              f"({best['median_ms']:.1f} against {best['slower_than_float_ms']:.1f} ms): "
              f"smaller, not faster")
    return 0


def cmd_evaluate(args):
    from albert_keras.drivers.inference import evaluate

    _progress_to_stderr()  # stdout holds the metrics' JSON

    _print_metrics(evaluate(args.model, args.data, batch_size=args.batch_size,
                            length_buckets=args.length_buckets, precision=args.precision,
                            runtime=args.runtime))
    return 0


def _read_input_lines(path):
    if path in (None, "-"):
        return [line.rstrip("\n") for line in sys.stdin if line.strip()]
    lines = []
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as e:
                raise CliError(f"{path}:{number}: not valid UTF-8 ({e.reason})") from None
            if line.strip():
                lines.append(line)
    return lines


def _progress_to_stderr():
    """The library's progress lines (where it runs) to stderr, so that
    stdout is the JSONL alone."""
    for handler in logging.getLogger("albert_keras").handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(sys.stderr)


def _check_out(args, *inputs):
    """Before any work: --out is neither an existing file (without
    --overwrite) nor one of the command's inputs."""
    if args.out not in (None, "-"):
        check_output(args.out, [args.model, *inputs], args.overwrite)


def _write_jsonl(records, out):
    if out in (None, "-"):
        for record in records:
            print(json.dumps(record, ensure_ascii=False))
        return
    with atomic_write(out) as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


def cmd_predict(args):
    from albert_keras.drivers.inference import predict

    _check_out(args, args.input)
    if args.out in (None, "-"):
        _progress_to_stderr()  # stdout holds the predictions
    path = args.input
    if path in (None, "-"):
        # stdin: one JSON object per line, in the task's file format.
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False,
                                         encoding="utf-8") as f:
            f.write("\n".join(_read_input_lines(None)) + "\n")
            path = f.name
    try:
        _write_jsonl(predict(args.model, path, batch_size=args.batch_size,
                             length_buckets=args.length_buckets, precision=args.precision,
                             runtime=args.runtime),
                     args.out)
    except ValueError as e:
        if path == args.input:
            raise
        # Name the input as the user knows it, not by the temporary file.
        raise CliError(str(e).replace(path, "<stdin>")) from None
    finally:
        if path != args.input:
            os.remove(path)
    return 0


def cmd_fill_mask(args):
    from albert_keras.drivers.inference import fill_mask

    texts = args.text or _read_input_lines(None)
    for text, masks in zip(texts, fill_mask(args.model, texts, top_k=args.top_k,
                                            tokenizer=args.tokenizer)):
        print(text)
        for i, candidates in enumerate(masks):
            # the text a candidate adds, not its piece ("fox", not "▁fox")
            shown = ", ".join(f"{c['text'] or '(space)'} {c['probability']:.3f}"
                              for c in candidates)
            print(f"  [MASK] {i + 1}: {shown}")
    return 0


def cmd_embed(args):
    import numpy as np

    from albert_keras.drivers.inference import embed

    _check_out(args, args.input, args.tokenizer)
    texts = _read_input_lines(args.input)
    if not texts:
        raise CliError(f"{'<stdin>' if args.input in (None, '-') else args.input}: "
                       "no text to embed (every line is empty)")
    layers = None if args.layers is None else [int(i) for i in args.layers.split(",")]
    vectors = embed(args.model, texts, layers=layers, pooling=args.pooling,
                    combine=args.combine, normalize=args.normalize,
                    dimensions=args.dimensions,
                    sequence_length=args.seq_length, tokenizer=args.tokenizer,
                    length_buckets=args.length_buckets)
    if args.out and args.out.endswith(".npy"):
        with atomic_path(args.out, suffix=".npy") as tmp:
            np.save(tmp, vectors)
        print(f"{vectors.shape[0]} x {vectors.shape[1]} embeddings -> {args.out}")
    else:
        _write_jsonl(({"text": t, "embedding": [round(float(x), 6) for x in v]}
                      for t, v in zip(texts, vectors)), args.out)
    return 0


def add_parsers(sub, add_backend_flag):
    """The task commands' parsers: fine-tuning and distillation, then the
    commands that use a fine-tuned or pretrained folder."""
    _add_finetune(sub, add_backend_flag)
    _add_distill(sub, add_backend_flag)
    _add_shrink(sub)
    _add_evaluate_and_predict(sub)
    _add_fill_mask(sub)
    _add_embed(sub)


def _add_finetune(sub, add_backend_flag):
    from albert_keras.tasks.finetune_config import FinetuneConfig

    p = sub.add_parser(
        "finetune", help="fine-tune on a classification, tagging, QA or multiple-choice task",
        description="Files: CSV/TSV/JSONL for classify, CoNLL for tag, SQuAD JSON for qa, "
                    "JSONL for choice. Labels are discovered on --train and saved.",
    )
    p.add_argument("--init", required=True,
                   help="a pretraining model folder, a published HF/TF1 checkpoint folder "
                   "(its spiece.model or vocab.txt comes along), or a .keras file with "
                   "--tokenizer")
    p.add_argument("--tokenizer", default=None,
                   help="tokenizer file (default: the one in --init)")
    p.add_argument("--train", required=True, help="the training file")
    _add_selection_flags(p)
    p.add_argument("--out", required=True, help="the model folder to write")
    add_flags(p, FinetuneConfig)
    add_backend_flag(p)
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing output folder (default: refuse)")
    p.set_defaults(func=cmd_finetune)


def _add_distill(sub, add_backend_flag):
    from albert_keras.drivers.distill_config import DistillConfig

    p = sub.add_parser(
        "distill", help="teach a fine-tuned model's task to a smaller student",
        description="The student learns the teacher's softened outputs on the training rows "
                    "and on unlabelled rows, plus the labels where there are any. Its folder "
                    "is an ordinary fine-tuned one: evaluate, predict and export take it.",
    )
    p.add_argument("--teacher", required=True, help="a fine-tuned model folder")
    p.add_argument("--train", required=True, help="the labelled training file")
    _add_selection_flags(p)
    p.add_argument("--unlabeled", default=None,
                   help="a file in the task's format for the teacher to label, or 'corpus' "
                   "(the embedded speeches; classify and tag)")
    p.add_argument("--out", required=True, help="the student's model folder")
    add_flags(p, DistillConfig)
    add_backend_flag(p)
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing output folder (default: refuse)")
    p.set_defaults(func=cmd_distill)


def _add_shrink(sub):
    from albert_keras.drivers.shrink_config import ShrinkConfig

    p = sub.add_parser(
        "shrink", help="the smallest phone file that keeps a classifier's accuracy",
        description="Distils each student preset from the teacher, exports each (and the "
                    "teacher) in each quantization mode, validates and scores every file on "
                    "the eval rows, times it, and recommends the smallest within the "
                    "tolerance: shrink.md, shrink.json, shrink.png and recommended.tflite "
                    "in --out. A run started again on the same --out resumes.",
    )
    p.add_argument("teacher", help="a fine-tuned classifier folder")
    p.add_argument("--train", required=True, help="the labelled rows the students learn from")
    p.add_argument("--eval", required=True, help="the labelled rows every file is scored on")
    p.add_argument("--unlabeled", default=None,
                   help="rows for the teacher to label for the students, or 'corpus'")
    p.add_argument("--out", required=True, help="the run's folder")
    add_flags(p, ShrinkConfig)
    p.set_defaults(func=cmd_shrink)


def _add_evaluate_and_predict(sub):
    p = sub.add_parser("evaluate", help="task metrics of a fine-tuned folder on a labelled file")
    p.add_argument("model", help="a fine-tuned model folder")
    p.add_argument("data", help="a labelled file in the task's format")
    p.add_argument("--batch-size", type=int, default=64, help="(default: %(default)s)")
    _add_length_buckets(p)
    _add_prediction_precision(p)
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("predict", help="predictions of a fine-tuned folder, as JSONL")
    p.add_argument("model", help="a fine-tuned model folder")
    p.add_argument("--input", default="-",
                   help="a file in the task's format (default: stdin JSONL)")
    p.add_argument("--out", default="-", help="JSONL file (default: stdout)")
    p.add_argument("--batch-size", type=int, default=64, help="(default: %(default)s)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out file (default: refuse)")
    _add_length_buckets(p)
    _add_prediction_precision(p)
    p.set_defaults(func=cmd_predict)


def _add_length_buckets(p):
    from albert_keras.tasks.finetune_config import FinetuneConfig

    add_flags(p, FinetuneConfig, only=("length_buckets",))


def _add_prediction_precision(p):
    p.add_argument("--runtime", default="auto", choices=("auto", "keras", "litert"),
                   help="auto: up to 4 texts run in the LiteRT file finetune kept for the "
                        "model (XNNPACK, float32), more on TensorFlow; keras: TensorFlow "
                        "runs the model; litert: the model is converted to LiteRT first "
                        "(seconds, kept for next time) and XNNPACK runs it row by row, in "
                        "float32: faster for a few short texts, slower for many rows "
                        "(default: %(default)s)")
    p.add_argument("--precision", default="auto", choices=("auto", "float32"),
                   help="how a model trained in bf16 computes: auto runs batches of 256 "
                        "pieces or more in bf16 where the CPU multiplies it natively and "
                        "smaller ones in float32; float32 runs every batch in float32 "
                        "(a float32 model computes in float32 either way) (default: "
                        "%(default)s)")


def _add_fill_mask(sub):
    p = sub.add_parser("fill-mask", help="top-k pieces for each [MASK] (pretraining folder)")
    p.add_argument("model", help="a pretraining folder, a pretrainer .keras, or a published "
                   "HF/TF1 checkpoint folder with an MLM head")
    p.add_argument("text", nargs="*", help="texts with [MASK] (default: stdin lines)")
    p.add_argument("--top-k", type=int, default=5, help="(default: %(default)s)")
    p.add_argument("--tokenizer", default=None, help="tokenizer file (default: the folder's)")
    p.set_defaults(func=cmd_fill_mask)


def _add_embed(sub):
    p = sub.add_parser("embed", help="text embeddings from any layer(s)")
    p.add_argument("model", help="any of our model folders, or a published HF/TF1 checkpoint "
                   "folder")
    p.add_argument("--input", default="-", help="one text per line (default: stdin)")
    p.add_argument("--out", default="-", help=".npy or JSONL file (default: JSONL on stdout)")
    # None: an embedder trained here (finetune --task embed) keeps its own
    p.add_argument("--layers", default=None,
                   help="comma-separated; 0 = embeddings, -1 = last (default: the folder's "
                   "embedder's, else -1)")
    p.add_argument("--pooling", default=None, choices=("mean", "max", "cls", "pooled"),
                   help="(default: the folder's embedder's, else mean)")
    p.add_argument("--combine", default=None, choices=("concat", "mean"),
                   help="how several layers are joined (default: the folder's embedder's, "
                   "else concat)")
    p.add_argument("--normalize", action=argparse.BooleanOptionalAction, default=None,
                   help="L2-normalize (default: the folder's embedder's, else off)")
    p.add_argument("--dimensions", type=int, default=None,
                   help="keep each vector's first D features, before normalizing (an "
                        "embedder trained with --matryoshka-dims, cut short; default: the "
                        "folder's embedder's, else all)")
    p.add_argument("--seq-length", type=int, default=128, help="(default: %(default)s)")
    p.add_argument("--tokenizer", default=None, help="tokenizer file (default: the folder's)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out file (default: refuse)")
    _add_length_buckets(p)
    p.set_defaults(func=cmd_embed)
