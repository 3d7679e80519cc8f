"""What starting from an HF folder costs a run, and whether a cache would help.

Issue 85 asks that a converted HF folder not be converted again on every
run. Before building a cache of converted ``.keras`` files, this measures,
in one process, interleaved repeat by repeat, at a real checkpoint's shape
(``--shape``, BERT's 30,522 pieces, random weights):

* ``convert``: ``load_checkpoint`` of the HF folder (read the safetensors,
  build the model, assign the tensors);
* ``load_keras``: ``load_model`` of the same model saved as ``.keras``
  (what a cache hit would cost instead);
* ``encoder``: ``ModelSource.encoder``, what fine-tuning calls: the
  folder's encoder built once, with the run's dtype, and its tokenizer;
* ``encoder_rebuilt``: what it did before: convert the folder's model, then
  rebuild its encoder with the run's dtype (two models built).

    python benchmarks/conversion_cost.py --out benchmarks/results/conversion_cost.json
    python benchmarks/conversion_cost.py --shape tiny --repeats 1   # smoke
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cpu_with_features  # noqa: E402  (benchmarks/ is the script's folder)
from real_folders import BERT_VOCAB  # noqa: E402
from real_folders import SHAPES  # noqa: E402

TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=64)


def main(argv=None):
    args = _parser().parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        folder = _hf_folder(work, TINY if args.shape == "tiny" else SHAPES[args.shape])
        times = _measure(folder, os.path.join(work, "model.keras"), args.repeats)
    result = {"cpu": cpu_with_features(), "cores": os.cpu_count(), "shape": args.shape,
              "vocab_size": BERT_VOCAB, "seconds": times,
              "median_s": {k: statistics.median(v) for k, v in times.items()}}
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    print(json.dumps(result["median_s"]))
    return result


def _hf_folder(work, shape):
    """A random ``BertModel`` folder with a WordPiece vocabulary of BERT's size."""
    import transformers

    folder = os.path.join(work, "hf")
    transformers.BertModel(transformers.BertConfig(vocab_size=BERT_VOCAB, **shape)) \
        .save_pretrained(folder)
    pieces = (["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]",
              "[MASK]"])
    pieces += [f"w{i}" for i in range(BERT_VOCAB - len(pieces))]
    with open(os.path.join(folder, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(pieces) + "\n")
    return folder


def _measure(folder, saved, repeats):
    from albert_keras.convert import load_checkpoint
    from albert_keras.models.encoder_settings import EncoderSettings
    from albert_keras.saving import load_model
    from albert_keras.sources.checkpoint_reader import model as converted_checkpoint
    from albert_keras.sources.model_rebuild import rebuilt_encoder
    from albert_keras.sources.model_source import ModelSource

    load_checkpoint(folder, strict=False)[0].save(saved)  # also warms the imports up
    settings = EncoderSettings(dtype="float32")
    times = {"convert": [], "load_keras": [], "encoder": [], "encoder_rebuilt": []}
    for repeat in range(repeats):
        times["convert"].append(_seconds(lambda: load_checkpoint(folder, strict=False)))
        times["load_keras"].append(_seconds(lambda: load_model(saved)))
        # new folder paths each time, so the in-process cache does not answer
        fresh, again = f"{folder}_{repeat}", f"{folder}_{repeat}_rebuilt"
        os.symlink(folder, fresh)
        os.symlink(folder, again)
        times["encoder"].append(_seconds(lambda: ModelSource(fresh).encoder(dtype="float32")))
        times["encoder_rebuilt"].append(_seconds(lambda: rebuilt_encoder(
            converted_checkpoint(again), again, settings)))
    return times


def _seconds(run):
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="minilm_l6", choices=sorted(SHAPES) + ["tiny"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=None, help="results JSON")
    return parser


if __name__ == "__main__":
    main()
