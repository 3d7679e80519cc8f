"""Our ``export --web`` page against transformers.js, same weights, same Chromium.

A BERT classifier of MiniLM-L6's shape (30,522-piece vocabulary, random
start; ``--shape`` picks another of ``real_folders``', such as Ettin's 32M
ModernBERT encoder with its byte-level BPE) is fine-tuned here for one epoch on short State of the Union
sentences, exported with ``--web`` in float32, float16 and dynamic int8
(input lengths 16, 32, 64 and 128), and written out to HF with ``convert
--to hf``; that folder goes to ONNX (``torch.onnx.export``) and to
ONNX Runtime's dynamic int8 (``quantize_dynamic``, what transformers.js
calls q8) and is run by transformers.js' ``pipeline("text-classification")``
on its wasm backend. Both pages are served from localhost without
cross-origin isolation (one thread each) and opened in headless Chromium
(Debian's), interleaved repeat by repeat; each times the same texts one at
a time after 10 warm-up texts. Ours also runs with every text padded to 128
(``fixed 128``), as before the length signatures. Reported: median ms per
text, the load time, the model file and the runtime bytes the page
downloaded, and how often the top label agrees with ours in float32.

    python benchmarks/web_speed.py --out benchmarks/results/web_speed_amd_bf16.json
    python benchmarks/web_speed.py --rows 64 --texts 20 --repeats 1 --modes none  # smoke
    python benchmarks/web_speed.py --shape ettin_encoder_32m --modes none dynamic
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import cpu_with_features  # noqa: E402  (benchmarks/ is the script's folder)
from real_folders import ALL_SHAPES  # noqa: E402
from real_folders import cli  # noqa: E402
from real_folders import corpus  # noqa: E402
from real_folders import family_of  # noqa: E402
from real_folders import model_folder  # noqa: E402
from real_folders import task_files  # noqa: E402
from web_pages import HF_PAGE  # noqa: E402
from web_pages import OUR_PAGE  # noqa: E402

MODES = ("none", "float16", "dynamic")


def main():
    args = _parser().parse_args()
    work = args.work or tempfile.mkdtemp(prefix="web-speed-")
    files, cls = _models(work, args)
    pages = {}
    for mode in args.modes:
        site = os.path.join(work, f"site_{mode}")
        if not os.path.isdir(site):
            cli("export", cls, "--out", os.path.join(work, f"{mode}.tflite"), "--quantize",
                 mode, "--web", site)
        for variant, fixed in (("buckets", "false"), ("fixed128", "true")):
            with open(os.path.join(site, f"bench_{variant}.html"), "w") as f:
                f.write(OUR_PAGE.replace("FIXED", fixed))
            pages[f"ours {mode} {variant}"] = (site, f"bench_{variant}.html", "model.tflite")
    modules = _node_modules()
    hf_site = os.path.join(work, "site_hf")
    if not os.path.isdir(hf_site):
        _hf_site(hf_site, cls, modules)
    for dtype, file in (("fp32", "model.onnx"), ("q8", "model_quantized.onnx")):
        with open(os.path.join(hf_site, f"bench_{dtype}.html"), "w") as f:
            f.write(HF_PAGE.replace("DTYPE", dtype))
        pages[f"transformers.js {dtype}"] = (hf_site, f"bench_{dtype}.html",
                                             f"models/cls/onnx/{file}")
    texts = _texts(files["predict"])
    results = _measure(pages, texts, modules, args.repeats, work)
    with open(os.path.join(work, "raw_results.json"), "w") as f:
        json.dump(results, f)
    summary = _summarize(results, pages, files["pieces"])
    print(_table(summary))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"cpu": cpu_with_features(), "shape": args.shape, "texts": len(texts),
                       "pieces": files["pieces"],
                       "rows_trained": args.rows, "results": summary}, f, indent=2)


def _models(work, args):
    """The task files and the fine-tuned classifier (reused from ``--work``)."""
    text = corpus(work) if not os.path.isdir(os.path.join(work, "sotu")) else None
    bert = os.path.join(work, family_of(args.shape))
    if text is not None:
        bert = model_folder(work, text["texts"], args.shape)
        files = task_files(work, text, "short", args.rows, args.texts, bert)
        with open(os.path.join(work, "files.json"), "w") as f:
            json.dump(files, f)
    with open(os.path.join(work, "files.json")) as f:
        files = json.load(f)
    cls = os.path.join(work, "cls")
    if not os.path.isdir(cls):
        cli("finetune", "--init", bert, "--task", "classify", "--train", files["train"],
             "--eval", files["eval"], "--epochs", "1", "--seq-length", "128", "--out", cls)
    return files, cls


def _parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=512, help="fine-tuning rows")
    p.add_argument("--texts", type=int, default=200, help="timed texts")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    p.add_argument("--shape", default="minilm_l6", choices=sorted(ALL_SHAPES),
                   help="the checkpoint's shape (random weights, fine-tuned here)")
    p.add_argument("--work", help="keep the models here, and reuse those a run left there "
                                  "(default: a temporary folder)")
    p.add_argument("--out", help="the results JSON")
    return p


def _node_modules():
    """transformers.js and puppeteer-core at the lock file's versions, in the cache."""
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                         "albert_keras", "web-benchmark")
    if not os.path.isdir(os.path.join(cache, "node_modules")):
        os.makedirs(cache, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(os.path.join(HERE, "web", name), os.path.join(cache, name))
        subprocess.run(["npm", "ci", "--ignore-scripts", "--loglevel=error"], cwd=cache,
                       check=True, env={**os.environ, "PUPPETEER_SKIP_DOWNLOAD": "1"})
    shutil.copyfile(os.path.join(HERE, "web", "bench.mjs"), os.path.join(cache, "bench.mjs"))
    return os.path.join(cache, "node_modules")


def _hf_site(site, cls, modules):
    """Our classifier as an HF folder, in ONNX (float and dynamic int8), with
    transformers.js and ONNX Runtime Web's files beside it, in ``site``."""
    import torch
    import transformers
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic

    folder = os.path.join(site, "models", "cls")
    cli("convert", cls, "--to", "hf", "--out", folder)
    # tokenizer.json, which transformers.js reads (a BERT folder may have only vocab.txt)
    transformers.AutoTokenizer.from_pretrained(folder).save_pretrained(folder)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
    os.makedirs(os.path.join(folder, "onnx"))
    ids = torch.ones((1, 16), dtype=torch.long)
    # ModernBERT reads no segments: its graph takes the two inputs its forward has
    names = ["input_ids", "attention_mask", "token_type_ids"][
        :3 if model.config.model_type == "bert" else 2]
    torch.onnx.export(model, (ids, ids, torch.zeros_like(ids))[:len(names)],
                      os.path.join(folder, "onnx", "model.onnx"),
                      input_names=names, output_names=["logits"], dynamo=False,
                      opset_version=17,
                      dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names})
    quantize_dynamic(os.path.join(folder, "onnx", "model.onnx"),
                     os.path.join(folder, "onnx", "model_quantized.onnx"),
                     weight_type=QuantType.QInt8)
    shutil.copyfile(os.path.join(modules, "@huggingface/transformers/dist/transformers.min.js"),
                    os.path.join(site, "transformers.min.js"))
    shutil.copytree(os.path.join(modules, "onnxruntime-web", "dist"), os.path.join(site, "ort"))
    return site


def _texts(path):
    import csv

    with open(path, encoding="utf-8", newline="") as f:
        return [row["text"] for row in csv.DictReader(f)]


def _measure(pages, texts, modules, repeats, work):
    texts_path = os.path.join(work, "texts.json")
    with open(texts_path, "w") as f:
        json.dump(texts, f)
    results = {name: [] for name in pages}
    for repeat in range(repeats):
        for name, (site, page, _) in pages.items():
            results[name].append(_run_page(site, page, texts_path, modules, work))
            print(f"repeat {repeat + 1} {name}: "
                  f"{statistics.median(results[name][-1]['ms']):.1f} ms", flush=True)
    return results


def _run_page(site, page, texts_path, modules, work):
    out = os.path.join(work, "bench_out.json")
    server = subprocess.Popen([sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1"],
                              cwd=site, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True)
    try:
        port = server.stdout.readline().split("port ")[1].split(" ")[0]
        subprocess.run(["node", os.path.join(os.path.dirname(modules), "bench.mjs"),
                        f"http://127.0.0.1:{port}/{page}", texts_path, out], check=True,
                       timeout=1800)
    finally:
        server.terminate()
    with open(out) as f:
        return json.load(f)


def _summarize(results, pages, pieces):
    ours_float = results.get("ours none buckets")
    summary = {}
    for name, runs in results.items():
        site, _, model_file = pages[name]
        medians = [statistics.median(r["ms"]) for r in runs]
        downloaded = runs[0]["bytes"]
        model_bytes = os.path.getsize(os.path.join(site, model_file))
        entry = {"median_ms": round(statistics.median(medians), 2),
                 "medians_ms": [round(m, 2) for m in medians],
                 "load_ms": statistics.median(r["load_ms"] for r in runs),
                 "model_mb": round(model_bytes / 1e6, 1),
                 "runtime_mb": round((sum(downloaded.values()) - model_bytes) / 1e6, 1)}
        if ours_float:
            same = sum(a == b for a, b in zip(runs[0]["labels"], ours_float[0]["labels"]))
            entry["label_agreement_with_ours_float32"] = round(same / len(runs[0]["labels"]), 3)
        summary[name] = entry
    summary["_text_pieces"] = pieces
    return summary


def _table(summary):
    lines = ["| page | ms per text (median) | load ms | model MB | runtime MB | "
             "top label = ours float32 |", "|---|---:|---:|---:|---:|---:|"]
    for name, r in summary.items():
        if name.startswith("_"):
            continue
        lines.append(f"| {name} | {r['median_ms']:.1f} | {r['load_ms']:.0f} | "
                     f"{r['model_mb']} | {r['runtime_mb']} | "
                     f"{r.get('label_agreement_with_ours_float32', '')} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
