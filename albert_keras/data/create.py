"""``albert-keras data create``: corpus -> SOP + MLM TFRecord shards.

Phases: read documents -> choose held-out documents -> tokenize -> SOP pairs
+ masking per (dupe, document) -> shard assignment -> shards +
``manifest.json``.

Every (dupe, document) gets its own RNG seeded from ``(seed, dupe,
document)``, and every example a 64-bit key hashed from ``(seed, dupe,
document, pair)``: the key picks the example's shard and its place in it,
which is the global shuffle. The output is therefore byte-identical for a
seed whatever the number of processes, and whichever runner made it: the
in-process one here or the Apache Beam pipeline in ``beam_pipeline.py``.
The folder is written under a temporary name and renamed when complete: a
crash never leaves a half-written dataset.
"""

import dataclasses
import hashlib
import logging
import os
import random
import time

import numpy as np

from albert_keras.data.corpus import CorpusError
from albert_keras.data.corpus import CorpusStats
from albert_keras.data.corpus import read_documents
from albert_keras.data.data_config import DataConfig
from albert_keras.data.full_sentences import pack_full_sentences
from albert_keras.data.masking import mask_sequence
from albert_keras.data.masking import masking_scheme
from albert_keras.data.reader import MANIFEST_FILE
from albert_keras.data.sop_pairs import document_pairs
from albert_keras.data.tfrecords import FORMAT
from albert_keras.data.tfrecords import serialize_example
from albert_keras.data.tfrecords import write_shard
from albert_keras.data.worker_pool import WORKER
from albert_keras.data.worker_pool import parallel
from albert_keras.files import check_output
from albert_keras.files import write_json
from albert_keras.files import writing_folder
from albert_keras.progress import time_left
from albert_keras.text.registry import load_tokenizer

logger = logging.getLogger(__name__)


# -- what the workers run (module level so that multiprocessing can pickle it) -----------

def _tokenize(indices):
    if "sp" not in WORKER:
        WORKER["sp"] = load_tokenizer(WORKER["tokenizer_path"])
    sp, documents = WORKER["sp"], WORKER["documents"]
    return [sp.encode(documents[i]) for i in indices]


def _split_documents(split):
    """NSP draws B from documents of the same split only (others are empty)."""
    key = f"documents_{split}"
    if key not in WORKER:
        in_eval = WORKER["eval_set"]
        WORKER[key] = [
            doc if (i in in_eval) == (split == "eval") else []
            for i, doc in enumerate(WORKER["tokenized"])
        ]
    return WORKER[key]


def example_key(seed, dupe, index, pair):
    """A 64-bit key for one example: its shard and its place there.

    Hashed rather than drawn from one RNG over all examples, so that any
    process (or Beam worker) can compute it for the examples it made.
    """
    digest = hashlib.blake2b(f"{seed}/{dupe}/{index}/{pair}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "little")


def longest_ngram(config):
    """How many n-gram lengths a data config's masking draws from."""
    return len(masking_scheme(config.masking, config.max_ngram, config.whole_word)[0])


def document_examples(tokenized, index, config, word_starts, vocab_size,
                      all_documents=None, masked_counts=None, special_ids=None):
    """The examples of one tokenized document, for every dupe.

    Returns:
        A list of ``(key, tokens, segments, positions, labels, sop_label)``.
    """
    out = []
    scheme = masking_scheme(getattr(config, "masking", "ngram"), config.max_ngram,
                            config.whole_word)
    for dupe in range(config.dupe_factor):
        seed = np.random.SeedSequence([config.seed, dupe, index]).generate_state(1)[0]
        rng = random.Random(int(seed))
        pairs = document_pairs(
            tokenized, config.max_seq_length, rng,
            short_seq_prob=config.short_seq_prob, random_next=config.random_next,
            all_documents=all_documents, document_index=index,
        )
        for j, pair in enumerate(pairs):
            tokens, segments = pair.packed(special_ids)
            masked, positions, labels = mask_sequence(
                tokens, word_starts, rng, vocab_size,
                masked_lm_prob=config.masked_lm_prob,
                max_predictions=config.max_predictions,
                whole_word=scheme[1],
                masked_counts=masked_counts,
                special_ids=special_ids,
                ngram_probs=scheme[0],
            )
            out.append((example_key(config.seed, dupe, index, j), masked, segments,
                        positions, labels, pair.label))
    return out


def held_out_documents(num_documents, config):
    """Sorted indices of the held-out documents (``eval_fraction`` of them).

    ``random.sample`` keeps memory to the held-out count, not the corpus size.
    """
    num_eval = int(round(num_documents * config.eval_fraction))
    if config.eval_fraction > 0:
        num_eval = max(1, num_eval)
        if num_eval >= num_documents:
            raise CorpusError("eval_fraction leaves no training documents")
    return sorted(random.Random(config.seed).sample(range(num_documents), num_eval))


def shard_records(keyed):
    """A shard's records in key order (the global shuffle); the bytes break
    a tie, so the order never depends on how the examples arrived."""
    return [record for _, record in sorted(keyed)]


def num_shards_for(num_examples, config):
    return max(1, -(-num_examples // config.examples_per_shard))


def split_summary(examples_count, real_tokens, masked_tokens, sop_ones, ngrams, shards,
                  documents, eval_docs=None):
    """A split's manifest entry, from sums (the same whatever the order)."""
    summary = {
        "documents": documents,
        "document_indices": eval_docs,
        "examples": examples_count,
        "sop_label_1_fraction": round(sop_ones / examples_count, 4),
        "mask_rate": round(masked_tokens / real_tokens, 4),
        "mean_tokens": round(real_tokens / examples_count, 2),
        "masked_ngram_fractions": [round(c / max(1, sum(ngrams)), 4) for c in ngrams],
        "shards": shards,
    }
    if eval_docs is None:
        del summary["document_indices"]
    return summary


def _examples(task):
    """Examples of the documents ``indices`` of ``split``, for every dupe."""
    split, indices = task
    c = WORKER["config"]
    tokenized = WORKER["tokenized"]
    all_documents = _split_documents(split) if c.random_next else None
    out = []
    masked_counts = [0] * longest_ngram(c)
    for index in indices:
        out += document_examples(tokenized[index], index, c, WORKER["word_starts"],
                                 WORKER["vocab_size"], all_documents, masked_counts,
                                 WORKER["special_ids"])
    return out, masked_counts


def packed_inputs(tokenized, indices, split, config, sep_id):
    """RoBERTa-style inputs of one split: ``[(dupe, number, ids), ...]``.

    Each dupe reads the split's documents in its own seeded order, so the
    document boundaries fall in other places of the packed inputs.
    """
    out = []
    for dupe in range(config.dupe_factor):
        order = list(indices)
        seed = np.random.SeedSequence([config.seed, dupe, _SPLIT_CODE[split]])
        random.Random(int(seed.generate_state(1)[0])).shuffle(order)
        packed = pack_full_sentences((tokenized[i] for i in order), config.max_seq_length,
                                     sep_id)
        out += [(dupe, j, ids) for j, ids in enumerate(packed)]
    return out


# a packed input's seeds and keys name its split, since the inputs of both
# splits are numbered from 0 (a document's index is unique across splits)
_SPLIT_CODE = {"train": 0, "eval": 1}


def _packed_examples(task):
    """Masks the packed inputs of one task: ``[CLS] ids [SEP]``, one segment."""
    split, items = task
    c, special = WORKER["config"], WORKER["special_ids"]
    scheme = masking_scheme(c.masking, c.max_ngram, c.whole_word)
    out = []
    masked_counts = [0] * longest_ngram(c)
    for dupe, j, ids in items:
        seed = np.random.SeedSequence([c.seed, dupe, j, _SPLIT_CODE[split], 1])
        rng = random.Random(int(seed.generate_state(1)[0]))
        tokens = [special["cls"], *ids, special["sep"]]
        masked, positions, labels = mask_sequence(
            tokens, WORKER["word_starts"], rng, WORKER["vocab_size"],
            masked_lm_prob=c.masked_lm_prob, max_predictions=c.max_predictions,
            whole_word=scheme[1], masked_counts=masked_counts, special_ids=special,
            ngram_probs=scheme[0],
        )
        out.append((example_key(c.seed, dupe, f"{split}-packed", j), masked,
                    [0] * len(tokens), positions, labels, 0))
    return out, masked_counts


def _chunks(items, size):
    return [items[i : i + size] for i in range(0, len(items), size)]


class _Progress:
    """A plain progress line at most every ``seconds``, and one at the end."""

    def __init__(self, what, total, seconds=10.0, of="documents"):
        self.what, self.total, self.seconds, self.of = what, total, seconds, of
        self.started = self.shown = time.time()

    def __call__(self, done, count, unit):
        now = time.time()
        if now - self.shown < self.seconds and done < self.total:
            return
        self.shown = now
        rate = count / max(now - self.started, 1e-9)
        left = time_left(now - self.started, done, self.total)
        logger.info(f"{self.what}: {done}/{self.total} {self.of}, {count} {unit} "
                    f"({rate:,.0f} {unit}/s{', ' + left if left else ''})")


# -- the driver ------------------------------------------------------------------------


def create_pretraining_data(
    inputs, tokenizer_path, out_dir, config=None, workers=1, overwrite=False
):
    """Creates SOP + MLM pretraining shards from text.

    Args:
        inputs: corpus files and folders (see ``corpus.read_documents``).
        tokenizer_path: a unigram SentencePiece ``.model`` with ALBERT's ids.
        out_dir: the output folder (``train-*.tfrecord``, ``eval-*``,
            ``spm.model``, ``manifest.json``).
        config: a ``DataConfig``.
        workers: processes for tokenizing and example creation.
        overwrite: replace an existing ``out_dir``.

    Returns:
        The manifest dict.

    Example:
    >>> create_pretraining_data(["corpus.txt"], "spm.model", "data/",
    ...                         DataConfig(dupe_factor=2))  # doctest: +SKIP
    """
    config = config or DataConfig()
    if config.packing == "auto":  # the pretraining pipeline picks by objective
        config = dataclasses.replace(config, packing="pairs")
    config.validate()
    out_dir = os.path.abspath(os.fspath(out_dir))
    inputs = [os.fspath(i) for i in inputs]
    # an empty folder (made beforehand) is not an output to protect
    check_output(out_dir, [*inputs, tokenizer_path],
                 overwrite or (os.path.isdir(out_dir) and not os.listdir(out_dir)), folder=True,
                 marks=(MANIFEST_FILE,))
    tokenizer = load_tokenizer(tokenizer_path).check()
    started = time.time()
    documents, stats, eval_docs = _documents(inputs, config)
    tokenized = _tokenized(documents, tokenizer_path, workers)
    results, ngrams = _examples_by_split(tokenized, eval_docs, tokenizer, config, workers)
    corpus = {"stats": stats, "documents": len(documents), "eval_docs": eval_docs}
    manifest = _write_shards(out_dir, results, ngrams, tokenizer, config, corpus)
    elapsed = time.time() - started
    total = sum(len(v) for v in results.values())
    logger.info(f"wrote {total} examples to {out_dir} in {elapsed:.1f}s "
                f"({total / max(elapsed, 1e-9):.0f} examples/s)")
    return manifest


def _documents(inputs, config):
    """The corpus's usable documents, its statistics and the held-out ones."""
    stats = CorpusStats()
    documents = list(read_documents(
        inputs, layout=config.layout, text_field=config.text_field,
        errors=config.errors, stats=stats,
    ))
    if not documents:
        raise CorpusError(
            f"{', '.join(map(str, inputs))}: no usable document (need at least two "
            f"sentences each; skipped {stats.skipped_empty} empty and "
            f"{stats.skipped_one_sentence} one-sentence documents)"
        )
    eval_docs = held_out_documents(len(documents), config)
    logger.info(f"read {stats.documents} documents from {stats.files} files "
                f"({len(eval_docs)} held out for evaluation)")
    return documents, stats, eval_docs


def _tokenized(documents, tokenizer_path, workers):
    """Every document's sentences as ids, made by ``workers`` processes."""
    show, seen = _Progress("tokenizing", len(documents)), [0]

    def tokenized_progress(done, part):
        seen[0] += len(part)
        show(seen[0], seen[0], "documents")

    parts = parallel(
        _tokenize, _chunks(list(range(len(documents))), 16),
        {"tokenizer_path": os.fspath(tokenizer_path), "documents": documents}, workers,
        tokenized_progress,
    )
    return [d for part in parts for d in part]


def _examples_by_split(tokenized, eval_docs, tokenizer, config, workers):
    """Paired (or packed) and masked examples per split, with the n-gram
    lengths masked."""
    eval_set = set(eval_docs)
    state = {"tokenized": tokenized, "eval_set": eval_set, "config": config,
             "word_starts": tokenizer.word_starts(), "vocab_size": tokenizer.vocabulary_size,
             "special_ids": tokenizer.special_ids}
    splits = {"train": [i for i in range(len(tokenized)) if i not in eval_set],
              "eval": eval_docs}
    if config.packing == "full_sentences":
        tasks = [(split, chunk) for split, indices in splits.items()
                 for chunk in _chunks(packed_inputs(tokenized, indices, split, config,
                                                    tokenizer.special_ids["sep"]), 256)]
        state["tokenized"] = None  # the tasks carry their ids
        unit, work, count = "inputs", _packed_examples, sum(len(t[1]) for t in tasks)
    else:
        tasks = [(split, chunk) for split, indices in splits.items()
                 for chunk in _chunks(indices, 8)]
        unit, work, count = "documents", _examples, len(tokenized)
    show, made = _Progress("making examples", count, of=unit), [0, 0]

    def example_progress(done, part):
        made[0] += len(tasks[done - 1][1])
        made[1] += len(part[0])
        show(made[0], made[1], "examples")

    parts = parallel(work, tasks, state, workers, example_progress)
    results = {split: [] for split in splits}
    ngrams = {split: [0] * longest_ngram(config) for split in splits}
    for (split, _), (examples, counts) in zip(tasks, parts):
        results[split].extend(examples)
        ngrams[split] = [a + b for a, b in zip(ngrams[split], counts)]
    return results, ngrams


def _write_shards(out_dir, results, ngrams, tokenizer, config, corpus):  # noqa: PLR0913 (the step's inputs)
    """Shards, the tokenizer and ``manifest.json``, written under a temporary
    name and renamed."""
    num_eval = len(corpus["eval_docs"])
    with writing_folder(out_dir) as tmp_dir:
        manifest = {
            "format": FORMAT,
            "config": dataclasses.asdict(config),
            "tokenizer": tokenizer.file_name,
            "vocab_size": tokenizer.vocabulary_size,
            "corpus": corpus["stats"].to_dict(),
            "splits": {},
        }
        for split, examples in results.items():
            if not examples:
                continue
            num_shards = num_shards_for(len(examples), config)
            by_shard = [[] for _ in range(num_shards)]
            for key, *fields in examples:
                by_shard[key % num_shards].append((key, serialize_example(*fields, config)))
            shards = [write_shard(shard_records(part), tmp_dir, split, i, num_shards)
                      for i, part in enumerate(by_shard)]
            manifest["splits"][split] = split_summary(
                len(examples),
                real_tokens=sum(len(e[1]) for e in examples),
                masked_tokens=sum(len(e[3]) for e in examples),
                sop_ones=sum(e[5] for e in examples),
                ngrams=ngrams[split], shards=shards,
                documents=num_eval if split == "eval" else corpus["documents"] - num_eval,
                eval_docs=corpus["eval_docs"] if split == "eval" else None,
            )
        tokenizer.save(tmp_dir)
        write_json(os.path.join(tmp_dir, MANIFEST_FILE), manifest)
    return manifest
