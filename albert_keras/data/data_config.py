"""The knobs of example creation, recorded in every data folder's manifest.

A module of its own, free of TensorFlow, so that the command line can build
its flags (and answer ``--help``) without importing it.
"""

import dataclasses

from albert_keras.options import check_options
from albert_keras.options import option


@dataclasses.dataclass
class DataConfig:
    """Every knob of example creation (all recorded in the manifest)."""

    max_seq_length: int = option(128, "tokens per example, [CLS] and [SEP]s included", valid="[8, inf)")
    max_predictions: int = option(20, "most masked tokens per example", valid="[1, inf)")
    masked_lm_prob: float = option(0.15, "share of tokens masked", valid="(0, 1)")
    dupe_factor: int = option(5, "passes over the corpus, each with fresh pairs and masks", valid="[1, inf)")
    max_ngram: int = option(3, "longest masked n-gram (words)", flag="--ngram", valid="[1, inf)")
    whole_word: bool = option(True, "mask whole words")
    masking: str = option("ngram", "ngram: ALBERT's whole-word n-grams up to --ngram; span: "
                                   "SpanBERT's geometric spans of whole words (p 0.2, at most "
                                   "10); token: single pieces (BERT's first release)",
                          choices=("ngram", "span", "token"))
    packing: str = option("auto", "pairs: ALBERT's sentence pairs within one document, with a "
                                  "sentence-order label; full_sentences: RoBERTa's whole "
                                  "sentences packed across documents, one segment, no label; "
                                  "auto: full_sentences for --objective mlm, pairs otherwise",
                          choices=("auto", "pairs", "full_sentences"))
    short_seq_prob: float = option(0.1, "share of examples cut shorter than the maximum", valid="[0, 1]")
    random_next: bool = option(False, "next-sentence prediction instead of SOP (ablations)",
                               flag="--nsp")
    seed: int = option(12345, "pairs, masks, held-out documents and shard order")
    eval_fraction: float = option(0.0, "documents held out into an eval split", valid="[0, 1)")
    examples_per_shard: int = option(20000, "examples per TFRecord shard", valid="[1, inf)")
    layout: str = option("auto", "lines: blank line between documents; file: one document "
                                 "per file; jsonl, csv, tsv: one document per record or row "
                                 "(auto: by the file's extension)",
                         choices=("auto", "lines", "file", "jsonl", "csv", "tsv"))
    text_field: str = option("text", "the JSONL field or CSV/TSV column holding the text")
    errors: str = option("strict", "what to do with bytes that are not UTF-8",
                         choices=("strict", "replace"))

    def validate(self):
        check_options(self)
        if self.masking not in ("ngram", "span", "token"):
            raise ValueError(f"masking must be ngram, span or token, got {self.masking!r}")
        if self.packing not in ("auto", "pairs", "full_sentences"):
            raise ValueError(f"packing must be auto, pairs or full_sentences, got "
                             f"{self.packing!r}")
        if self.packing == "full_sentences" and self.random_next:
            raise ValueError("--nsp needs sentence pairs; it cannot go with "
                             "--packing full_sentences")
