"""``presets`` and ``convert``."""

import os

from albert_keras.cli.flags import CliError
from albert_keras.cli.flags import number_in
from albert_keras.families import families

# Paper Table 4 (ALBERT-base, E = 128), in millions of parameters.
PAPER_TABLE_4 = {"all": 12, "attention": 64, "ffn": 38, "none": 89}


def cmd_presets(args):
    from albert_keras.presets import PRESETS
    from albert_keras.presets import count_parameters
    from albert_keras.presets import get_preset

    overrides = {"vocab_size": args.vocab_size} if args.vocab_size else {}
    from albert_keras.families import family_of

    header = ("name", "family", "layers", "H", "E", "heads", "FFN", "sharing", "vocab",
              "params")
    rows = []
    for name in PRESETS:
        c = get_preset(name, **overrides)
        rows.append((name, family_of(c).name, c.num_hidden_layers, c.hidden_size,
                     c.embedding_size, c.num_attention_heads, c.intermediate_size,
                     _sharing(c), c.vocab_size, f"{count_parameters(c):,}"))
    print_table(header, rows)
    print()
    print("albert_base sharing variants (paper Table 4, E = 128, vocab 30000):")
    rows = []
    for sharing, paper in PAPER_TABLE_4.items():
        c = get_preset("albert_base", sharing=sharing, vocab_size=30000)
        rows.append((sharing, f"{count_parameters(c):,}", f"{count_parameters(c) / 1e6:.1f}M",
                     f"{count_parameters(c, with_pooler=False) / 1e6:.1f}M", f"{paper}M"))
    print_table(("sharing", "params", "millions", "without pooler", "paper"), rows)
    return 0


def _sharing(config):
    """ALBERT's sharing mode, or how many distinct blocks another family's
    layers share (MobileBERT's ``num_hidden_groups``)."""
    if hasattr(config, "sharing"):
        return config.sharing
    groups = getattr(config, "num_hidden_groups", None)
    return "none" if groups in (None, config.num_hidden_layers) else f"{groups} blocks"


def print_table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for row in [header] + rows:
        print("  ".join(str(x).rjust(w) if i else str(x).ljust(w)
                        for i, (x, w) in enumerate(zip(row, widths))))


def cmd_convert(args):
    if args.onnx and args.to != "hf":
        raise CliError("--onnx is for --to hf (the folder transformers.js loads)")
    if args.to == "keras-hub":
        from albert_keras.convert.keras_hub_preset import save_keras_hub_preset
        from albert_keras.files import check_output
        from albert_keras.sources.model_source import ModelSource
        from albert_keras.sources.registry import read_tokenizer

        # a keras-hub preset holds config.json and metadata.json
        check_output(args.out, [args.src], args.overwrite, folder=True,
                     marks=("config.json", "metadata.json"))
        encoder = ModelSource(args.src).encoder(dtype="float32")
        save_keras_hub_preset(encoder, read_tokenizer(args.src, args.tokenizer), args.out)
        print(f"wrote keras-hub preset {args.out} (keras_hub.models."
              f"{'Bert' if encoder.config.sharing == 'none' else 'Albert'}Backbone.from_preset)")
        return 0
    if args.to == "hf":
        if args.tokenizer:
            raise CliError("--tokenizer is for --to keras or keras-hub (--to hf writes the "
                           "tokenizer the model carries)")
        _convert_to_hf(args)
        return 0
    return _convert_to_keras(args)


def _convert_to_hf(args):
    """The HF folder, and with ``--onnx`` its ONNX files, each validated
    before the folder is renamed into place."""
    from albert_keras.convert import save_hf
    from albert_keras.convert.hf_tokenizer import TOKENIZER_JSON
    from albert_keras.convert.hf_tokenizer import VOCABULARY_FILES
    from albert_keras.files import check_output
    from albert_keras.files import writing_folder
    from albert_keras.models.task_models.sentence_embedder import SentenceEmbedder

    check_output(args.out, [args.src], args.overwrite, folder=True, marks=("config.json",))
    model = _model_for_hf(args.src)
    # an embedder's HF folder is its encoder (the pooling is sentence-transformers'
    # modules, or transformers.js' feature-extraction options), so is its ONNX file
    graph = model.encoder if isinstance(model, SentenceEmbedder) else model
    if args.onnx:  # TensorFlow only with --onnx; its errors are one line (ValueError)
        from albert_keras.export import hf_onnx

        hf_onnx.check_onnx_request(graph)
    with writing_folder(args.out) as tmp:
        save_hf(model, tmp, overwrite=True,
                model_type=None if args.model_type == "auto" else args.model_type)
        embedder = _write_st_modules(tmp, model, args.src)
        report = hf_onnx.write_onnx(tmp, graph, hf_onnx.corpus_texts()) if args.onnx else None
    tokenizer = [n for n in (*VOCABULARY_FILES, TOKENIZER_JSON)
                 if os.path.isfile(os.path.join(args.out, n))]
    print(f"wrote HF folder {args.out} " + (f"(tokenizer: {' and '.join(tokenizer)})"
          if tokenizer else "(no tokenizer: the model carries none, so AutoTokenizer cannot "
                            "load it)"))
    if embedder:
        print(f"  {embedder}")
    if report:
        for line in _onnx_lines(report):
            print(line)


def _write_st_modules(folder, model, src):
    """An embedder's HF folder is also a sentence-transformers folder where
    its pooling has a module there; what was written, in a line (None for
    models that are no embedder)."""
    from albert_keras.models.task_models.sentence_embedder import SentenceEmbedder
    from albert_keras.sources.layout import read_task_spec
    from albert_keras.tasks.embed.st_folder import write_st_modules

    if not isinstance(model, SentenceEmbedder):
        return None
    if model.pooling not in ("mean", "cls", "max") or list(model.layers_) != [-1]:
        return (f"no sentence-transformers modules: pooling {model.pooling} of layers "
                f"{list(model.layers_)} has none (the encoder alone is written)")
    if model.dimensions is not None:  # ST's folder holds no cut; its users pass truncate_dim
        return (f"no sentence-transformers modules: the vectors are cut to "
                f"{model.dimensions} features, which a folder does not say (the encoder "
                f"alone is written; load it with truncate_dim={model.dimensions})")
    length = read_task_spec(src).get("sequence_length") if os.path.isdir(src) else None
    write_st_modules(folder, model.pooling, model.normalize, model.encoder.config.hidden_size,
                     length)
    return (f"sentence-transformers modules: {model.pooling} pooling"
            + (", normalized" if model.normalize else "") + " (modules.json)")


def _onnx_lines(report):
    lines = []
    for name in ("float", "quantized"):
        found = report[name]
        file = "model.onnx" if name == "float" else "model_quantized.onnx"
        shown = ", ".join(f"{k} {v:.4g}" for k, v in found.items()
                          if k in ("max_abs_diff", "top1_agreement", "mean_cosine"))
        state = (f"wrote onnx/{file} ({found['size_bytes'] / 1e6:.2f} MB)" if found["written"]
                 else f"did not write onnx/{file}: it changes too many answers")
        lines.append(f"  {state}; against Keras on {report['examples']} corpus sentences: "
                     f"{shown}")
    if not report["quantized"]["written"]:
        lines.append("  transformers.js loads onnx/model_quantized.onnx by default in "
                     "browsers: pass {dtype: 'fp32'} to pipeline() for this folder")
    return lines


def _convert_to_keras(args):
    """A checkpoint -> one ``.keras`` file that carries the source's
    tokenizer (or ``--tokenizer``): export and fine-tuning read it from the
    file alone, so a source without one is refused before any work."""
    from albert_keras.convert import load_checkpoint
    from albert_keras.convert import source_format_of
    from albert_keras.saving import save_model
    from albert_keras.sources.registry import read_tokenizer
    from albert_keras.sources.tokenizers import carry_tokenizer

    if not args.out.endswith(".keras"):
        raise CliError(f"{args.out}: --out must end in .keras")
    if os.path.exists(args.out) and not args.overwrite:
        raise CliError(f"{args.out} exists; pass --overwrite to replace it")
    source_format = (source_format_of(args.src) if args.source_format == "auto"
                     else args.source_format)
    try:
        tokenizer = read_tokenizer(args.src, args.tokenizer)
    except FileNotFoundError as e:
        if args.tokenizer:
            raise CliError(str(e)) from None
        raise CliError(f"{args.src}: no tokenizer file beside the checkpoint, and a .keras "
                       "carries its tokenizer: pass --tokenizer FILE (a SentencePiece "
                       ".model or a WordPiece vocab.txt)") from None
    model, report = load_checkpoint(args.src, source_format=source_format,
                                    config_path=args.config, strict=not args.allow_unused)
    carry_tokenizer(model, tokenizer)
    save_model(model, args.out, overwrite=args.overwrite)
    print(f"wrote {type(model).__name__} to {args.out} (tokenizer: {tokenizer.kind})")
    print(f"loaded: {', '.join(report['loaded'])}")
    if report["skipped"]:
        print(f"not in the source, left at initial values: {', '.join(report['skipped'])}")
    if report["unused"]:
        print(f"ignored {len(report['unused'])} tensors, e.g. {report['unused'][0]}")
    return 0


def _model_for_hf(src):
    """The model ``--to hf`` writes: a ``.keras`` file, or a model folder's
    pretrainer (the MLM head comes along), task model or encoder, given the
    folder's tokenizer when the file carries none (older files)."""
    from albert_keras.models.backbone import backbone_of
    from albert_keras.saving import load_model
    from albert_keras.sources.layout import ENCODER_FILE
    from albert_keras.sources.layout import PRETRAINER_FILE
    from albert_keras.sources.layout import TASK_MODEL_FILE
    from albert_keras.sources.layout import model_file
    from albert_keras.sources.registry import read_tokenizer
    from albert_keras.sources.tokenizers import carry_tokenizer

    if not (os.path.isdir(src) or src.endswith(".keras")):
        raise CliError(f"{src}: --to hf takes a .keras model file or a model folder")
    path = model_file(src, (PRETRAINER_FILE, TASK_MODEL_FILE, ENCODER_FILE))
    model = load_model(path)
    encoder = backbone_of(model)
    if encoder is not None and encoder.tokenizer_asset is None:
        try:
            carry_tokenizer(model, read_tokenizer(path))
        except FileNotFoundError:
            pass  # said when the folder is written
    return model


def add_parsers(sub):
    p = sub.add_parser("presets", help="print the preset architectures")
    p.add_argument("--vocab-size", type=number_in(int, "[1, inf)"), default=None,
                   help="count parameters with this vocabulary size (default: the preset's)")
    p.set_defaults(func=cmd_presets)

    p = sub.add_parser("convert",
                       help="HF folder or TF1 checkpoint -> .keras, or .keras -> HF folder")
    p.add_argument("src", help="HF folder (ALBERT, BERT, ELECTRA, DeBERTa-v2/v3 or MobileBERT), TF1 checkpoint (prefix "
                   "or folder), keras-hub preset folder, or .keras (a model folder too with "
                   "--to hf or --to keras-hub)")
    p.add_argument("--out", required=True,
                   help=".keras file, or folder with --to hf or --to keras-hub")
    p.add_argument("--from", dest="source_format", default="auto",
                   choices=("auto", "hf", "tf1", "keras-hub"),
                   help="the source's format (default: auto)")
    p.add_argument("--to", default="keras", choices=("keras", "hf", "keras-hub"),
                   help="the output's format (default: keras); keras-hub: a preset folder "
                        "that keras_hub's from_preset loads, tokenizer included")
    p.add_argument("--tokenizer", default=None,
                   help="--to keras or keras-hub: the tokenizer file the output carries "
                        "(default: the source folder's)")
    p.add_argument("--model-type", default="auto",
                   choices=("auto", *sorted(t for f in families() for t in f.hf_model_types)),
                   help="--to hf: the HF model_type to write (default: auto: the model's "
                        "family picks it, e.g. bert for an unshared E = H layout of the ALBERT "
                        "encoder, electra for a discriminator, else the family model_type)")
    p.add_argument("--config", default=None,
                   help="TF1: albert_config.json (default: next to the checkpoint)")
    p.add_argument("--allow-unused", action="store_true",
                   help="ignore source tensors the model has no place for (default: refuse)")
    p.add_argument("--onnx", action="store_true",
                   help="--to hf: also onnx/model.onnx and onnx/model_quantized.onnx "
                        "(per-channel int8), the files transformers.js loads, each run in "
                        "ONNX Runtime against the Keras model before it is written (needs "
                        "the onnx extra)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing output (default: refuse)")
    p.set_defaults(func=cmd_convert)
