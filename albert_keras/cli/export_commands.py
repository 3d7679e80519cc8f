"""``export`` (a validated ``.tflite``) and ``bench`` (measure one)."""

import json
import os
import sys

from albert_keras.cli.flags import add_flags
from albert_keras.cli.flags import config_from_args
from albert_keras.cli.flags import number_in


def cmd_export(args):
    from albert_keras.export import ValidationError
    from albert_keras.export import export_tflite
    from albert_keras.export.export_config import ExportConfig
    from albert_keras.export.web_folder import MODEL_FILE

    try:
        sidecar = export_tflite(args.model, args.out, config_from_args(ExportConfig, args))
    except ValidationError as e:
        print(json.dumps(e.report, indent=2), file=sys.stderr)
        raise
    report = sidecar["validation"]
    written = args.out or os.path.join(args.web, MODEL_FILE)
    for name, entry in report["outputs"].items():
        shown = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                          for k, v in entry.items())
        print(f"  {name}: {shown}")
    if "span_agreement" in report:
        print(f"  answer spans: agreement {report['span_agreement']:.4f}")
    if "tflite_accuracy" in report:
        print(f"  accuracy: keras {report['keras_accuracy']:.4f}, "
              f"tflite {report['tflite_accuracy']:.4f}")
    print(f"validated on {report['examples']} examples ({report['data']}); "
          f"wrote {written} ({sidecar['size_bytes'] / 1e6:.2f} MB)")
    if args.web:  # after the validation it rests on
        print(f"wrote the web page folder {args.web}: serve it (python -m http.server -d "
              f"{args.web}), then open index.html")
    return 0


def cmd_bench(args):
    from albert_keras.export.bench import bench

    result = bench(args.model, runs=args.runs, threads=args.threads)
    print(f"{result['path']}: {result['size_mb']:.2f} MB, median {result['median_ms']:.2f} ms "
          f"(p90 {result['p90_ms']:.2f}) over {result['runs']} runs at {result['threads']} "
          f"threads, peak memory {result['peak_rss_mb']:.0f} MB "
          f"({result['model_peak_mb']:.0f} MB above the runtime's imports)")
    if args.profile:
        from albert_keras.export.op_profile import format_profile
        from albert_keras.export.op_profile import profile_ops

        profile = profile_ops(args.model, threads=args.threads)
        print(f"per op (each op timed alone at {args.threads} threads, median of "
              f"{profile['runs']} runs):")
        print("\n".join(format_profile(profile, whole_ms=result["median_ms"], top=args.top)))
    return 0


def add_parsers(sub):
    from albert_keras.export.export_config import ExportConfig

    p = sub.add_parser(
        "export", help="a validated .tflite",
        description="Convert a model folder or .keras file to TFLite, run it in LiteRT "
                    "against Keras and write it only if they agree.",
    )
    p.add_argument("model", help="a model folder or .keras file")
    p.add_argument("--out",
                   help="the .tflite to write (a .json sidecar and a .md model card go "
                        "beside it); may be left out with --web, whose folder then holds "
                        "the only copy")
    add_flags(p, ExportConfig)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("bench", help="latency, size and memory of a .tflite in LiteRT")
    p.add_argument("model", help="the .tflite to measure")
    p.add_argument("--runs", type=number_in(int, "[1, inf)"), default=50, help="timed runs (default: %(default)s)")
    p.add_argument("--threads", type=number_in(int, "[1, inf)"), default=2,
                   help="interpreter threads (default: %(default)s)")
    p.add_argument("--profile", action="store_true",
                   help="also time every op on its own and print where the time goes, "
                        "per op kind and the slowest ops")
    p.add_argument("--top", type=number_in(int, "[1, inf)"), default=10,
                   help="with --profile, how many of the slowest ops to list "
                        "(default: %(default)s)")
    p.set_defaults(func=cmd_bench)
