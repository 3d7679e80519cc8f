"""``albert-keras data create --runner beam``: example creation on Apache Beam.

The same work as ``create.create_pretraining_data``, spread over a Beam
runner: the embedded DirectRunner by default, or Dataflow, Flink or Spark
by their usual pipeline options. The shards and the manifest are
byte-identical to the in-process path for the same seed, because both use
the same per-(dupe, document) RNG seeds and the same hashed example keys
for the shard and the order within it.

Phases: list files (here) -> read each file's documents (workers) -> plan:
global document indices and held-out documents (one worker, from the
per-file counts) -> tokenize -> SOP pairs + masking + serialization ->
count per split -> group by shard, sort by key, write -> the summary that
the manifest is made from (here).

Every worker reads the inputs and writes shards in the output's temporary
folder by path, so on a cluster both must be on storage all workers mount.

Example:
>>> create_pretraining_data_beam(["corpus/"], "spm.model", "data/",
...                              workers=4)  # doctest: +SKIP
"""

import contextlib
import dataclasses
import io
import json
import logging
import os
import re
import shlex
import time

from albert_keras.data.corpus import CorpusError
from albert_keras.data.corpus import CorpusStats
from albert_keras.data.corpus import list_files
from albert_keras.data.corpus import read_documents
from albert_keras.data.create import document_examples
from albert_keras.data.create import held_out_documents
from albert_keras.data.create import longest_ngram
from albert_keras.data.create import num_shards_for
from albert_keras.data.create import shard_records
from albert_keras.data.create import split_summary
from albert_keras.data.data_config import DataConfig
from albert_keras.data.reader import MANIFEST_FILE
from albert_keras.data.tfrecords import FORMAT
from albert_keras.data.tfrecords import serialize_example
from albert_keras.data.tfrecords import write_shard
from albert_keras.files import check_output
from albert_keras.files import write_json
from albert_keras.files import writing_folder
from albert_keras.text.registry import load_tokenizer

logger = logging.getLogger(__name__)

SUMMARY = "beam-summary.json"


class BeamError(RuntimeError):
    """The Beam pipeline failed for a reason other than bad input."""


@contextlib.contextmanager
def _beam_quiet():
    """Beam's own log lines (its tracebacks of a failed step, "apitools not
    found" at import) go only to a caller who asked for them: the errors we
    can name come back as one line anyway.
    """
    loggers = [logging.getLogger("apache_beam"), logging.getLogger()]  # root: "apitools"
    levels = [x.level for x in loggers]
    # a handler on the root logger keeps logging.warning() from installing
    # its own (basicConfig) for the rest of the process
    spare = logging.NullHandler()
    loggers[1].addHandler(spare)
    if not logger.isEnabledFor(logging.DEBUG):
        for x in loggers:
            x.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        loggers[1].removeHandler(spare)
        for x, level in zip(loggers, levels):
            x.setLevel(level)


def _import_beam():
    try:
        with _beam_quiet():
            import apache_beam as beam
    except ImportError:
        raise BeamError(
            "--runner beam needs Apache Beam: pip install 'albert-keras[beam]'") from None
    return beam


def _checked_options(options):
    """Parses Beam's options now: Beam's own parser prints its whole usage and
    exits on a bad value; here it is one line naming --beam-options."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            options.get_all_options()
    except SystemExit:
        lines = [line for line in stderr.getvalue().splitlines() if "error:" in line]
        reason = lines[-1].split("error:", 1)[1].strip() if lines else "cannot be parsed"
        raise BeamError(f"--beam-options: {reason}") from None
    return options


# -- steps (module level, so that runners can pickle them) ------------------------------


def read_file(item, config):
    """``(rank, path)`` -> its documents as ``("doc", (rank, i, sentences))`` and
    one ``("stats", (rank, CorpusStats dict))``."""
    rank, path = item
    stats = CorpusStats()
    documents = read_documents([path], layout=config.layout, text_field=config.text_field,
                               errors=config.errors, stats=stats)
    for i, sentences in enumerate(documents):
        yield ("doc", (rank, i, sentences))
    yield ("stats", (rank, stats.to_dict()))


def make_plan(file_stats, config):
    """Global document offsets per file, held-out documents and corpus totals."""
    file_stats = sorted(file_stats)
    offsets, total = {}, 0
    for rank, stats in file_stats:
        offsets[rank] = total
        total += stats["documents"]
    corpus = {k: sum(s[k] for _, s in file_stats) for k in CorpusStats().to_dict()}
    if not total:
        raise CorpusError(
            f"no usable document (need at least two sentences each; skipped "
            f"{corpus['skipped_empty']} empty and {corpus['skipped_one_sentence']} "
            "one-sentence documents)")
    return {"offsets": offsets, "num_documents": total,
            "eval": held_out_documents(total, config), "corpus": corpus}


class _SplitDocuments:
    """Every tokenized document of one split by global index, the others
    empty: what next-sentence prediction draws its random B from."""

    def __init__(self, tokenized, eval_set, split, size):
        self.tokenized, self.eval_set, self.split, self.size = tokenized, eval_set, split, size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if (index in self.eval_set) != (self.split == "eval"):
            return []
        return self.tokenized.get(index, [])


def _beam_steps(beam):
    """The DoFns, defined once Beam is imported."""

    class Tokenize(beam.DoFn):
        def __init__(self, tokenizer_path):
            self.tokenizer_path = tokenizer_path
            self.sp = None

        def setup(self):
            self.sp = load_tokenizer(self.tokenizer_path)

        def process(self, doc, plan):
            rank, i, sentences = doc
            yield plan["offsets"][rank] + i, self.sp.encode(sentences)

    class Examples(beam.DoFn):
        def __init__(self, config, tokenizer_path):
            self.config, self.tokenizer_path = config, tokenizer_path

        def setup(self):
            tokenizer = load_tokenizer(self.tokenizer_path)
            self.vocab_size, self.word_starts = tokenizer.vocabulary_size, tokenizer.word_starts()
            self.special_ids = tokenizer.special_ids

        def process(self, item, plan, all_tokenized=None):
            index, tokenized = item
            eval_set = set(plan["eval"])
            split = "eval" if index in eval_set else "train"
            all_documents = None
            if self.config.random_next:
                all_documents = _SplitDocuments(all_tokenized, eval_set, split,
                                                plan["num_documents"])
            counts = [0] * longest_ngram(self.config)
            examples = document_examples(tokenized, index, self.config, self.word_starts,
                                         self.vocab_size, all_documents, counts,
                                         self.special_ids)
            for key, *fields in examples:
                tokens, _, positions, _, label = fields
                yield beam.pvalue.TaggedOutput(
                    "sums", (split, (1, len(tokens), len(positions), label)))
                yield split, key, serialize_example(*fields, self.config)
            yield beam.pvalue.TaggedOutput("ngrams", (split, counts))

    return Tokenize, Examples


def _sum_lists(lists):
    """Element-wise sum of equal-length lists (Beam's combine function)."""
    return [sum(column) for column in zip(*lists)]


def _shard_key(example, counts, config):
    split, key, record = example
    return (split, key % num_shards_for(counts[split], config)), (key, record)


def _write(group, folder, counts, config):
    (split, index), keyed = group
    info = write_shard(shard_records(keyed), folder, split, index,
                       num_shards_for(counts[split], config))
    return split, index, info


def _write_summary(parts, path):
    summary = {"shards": [], "sums": {}, "ngrams": {}, "plan": None}
    for kind, value in parts:
        if kind == "shard":
            summary["shards"].append(value)
        elif kind == "plan":
            summary["plan"] = {k: value[k] for k in ("num_documents", "eval", "corpus")}
        else:
            summary[kind][value[0]] = value[1]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(summary, f)


# -- the driver --------------------------------------------------------------------------


def beam_options(workers=1, extra=""):
    """Pipeline options: ``extra`` (e.g. ``--runner=FlinkRunner ...``) as given,
    else the embedded DirectRunner on ``workers`` processes."""
    from apache_beam.options.pipeline_options import PipelineOptions

    args = shlex.split(extra) if extra else []
    if not any(a.startswith("--runner") for a in args):
        args = ["--runner=DirectRunner", f"--direct_num_workers={workers}",
                "--direct_running_mode="
                + ("multi_processing" if workers > 1 else "in_memory"),
                # the worker processes' INFO lines would bury our progress lines
                "--default_sdk_harness_log_level=WARNING", *args]
    return _checked_options(PipelineOptions(args))


def _beam_config(config):
    """``config`` checked, with ``auto`` packing resolved as Beam makes it."""
    config = config or DataConfig()
    if config.packing == "auto":
        config = dataclasses.replace(config, packing="pairs")
    config.validate()
    if config.packing == "full_sentences":
        # packing reads the documents of a split in one order, a sequential
        # step the per-document Beam transforms here do not have
        raise ValueError("--packing full_sentences is made by the in-process runner only "
                         "(drop --beam)")
    return config


def _examples_graph(beam, p, files, config, tokenizer_path):
    """Files to serialized examples: ``(made, plan)``, where ``made`` has the
    examples and the per-split ``sums`` and ``ngrams`` outputs."""
    Tokenize, Examples = _beam_steps(beam)
    read = (p | "files" >> beam.Create(list(enumerate(files)))
            | "read" >> beam.FlatMap(read_file, config))
    docs = read | "docs" >> beam.Filter(lambda kv: kv[0] == "doc") | (
        "doc_values" >> beam.Map(lambda kv: kv[1]))
    plan = (read | "stats" >> beam.Filter(lambda kv: kv[0] == "stats")
            | "stats_values" >> beam.Map(lambda kv: kv[1])
            | "all_stats" >> beam.combiners.ToList()
            | "plan" >> beam.Map(make_plan, config))
    plan_side = beam.pvalue.AsSingleton(plan)
    tokenized = docs | "tokenize" >> beam.ParDo(Tokenize(tokenizer_path), plan=plan_side)
    extra = {}
    if config.random_next:
        extra["all_tokenized"] = beam.pvalue.AsDict(tokenized)
    made = tokenized | "examples" >> beam.ParDo(
        Examples(config, tokenizer_path), plan=plan_side, **extra,
    ).with_outputs("sums", "ngrams", main="examples")
    return made, plan


def _shards_and_summary(beam, made, plan, config, tmp_dir):
    """Examples grouped into shards and written; the summary file the
    manifest is made from."""
    counts = beam.pvalue.AsSingleton(
        made.examples | "split_of" >> beam.Map(lambda e: (e[0], 1))
        | "count" >> beam.CombinePerKey(sum)
        | "counts" >> beam.combiners.ToDict())
    shards = (made.examples
              | "shard_of" >> beam.Map(_shard_key, counts, config)
              | "group" >> beam.GroupByKey()
              | "write" >> beam.Map(_write, tmp_dir, counts, config))
    parts = [
        shards | "tag_shards" >> beam.Map(lambda s: ("shard", s)),
        made.sums | "sum" >> beam.CombinePerKey(_sum_lists)
        | "tag_sums" >> beam.Map(lambda s: ("sums", s)),
        made.ngrams | "ngram_sum" >> beam.CombinePerKey(_sum_lists)
        | "tag_ngrams" >> beam.Map(lambda s: ("ngrams", s)),
        plan | "tag_plan" >> beam.Map(lambda s: ("plan", s)),
    ]
    _ = (parts | "parts" >> beam.Flatten() | "summary" >> beam.combiners.ToList()
         | "save" >> beam.Map(_write_summary, os.path.join(tmp_dir, SUMMARY)))


def _read_summary(tmp_dir):
    summary_path = os.path.join(tmp_dir, SUMMARY)
    with open(summary_path, encoding="utf-8") as f:
        summary = json.load(f)
    os.remove(summary_path)
    return summary


def create_pretraining_data_beam(inputs, tokenizer_path, out_dir, config=None, workers=1,
                                 overwrite=False, options=""):
    """Creates the shards of ``create_pretraining_data`` with Apache Beam.

    Args:
        inputs, tokenizer_path, out_dir, config, overwrite: as
            ``create_pretraining_data``.
        workers: DirectRunner processes (when ``options`` names no runner).
        options: Beam pipeline options as one string, e.g.
            ``"--runner=DataflowRunner --project=p --region=r"``.

    Returns:
        The manifest dict.
    """
    beam = _import_beam()
    config = _beam_config(config)
    out_dir = os.path.abspath(os.fspath(out_dir))
    inputs = [os.fspath(i) for i in inputs]
    # an empty folder (made beforehand) is not an output to protect
    check_output(out_dir, [*inputs, tokenizer_path],
                 overwrite or (os.path.isdir(out_dir) and not os.listdir(out_dir)), folder=True,
                 marks=(MANIFEST_FILE,))
    tokenizer_path = os.path.abspath(os.fspath(tokenizer_path))
    tokenizer = load_tokenizer(tokenizer_path).check()
    files = [os.path.abspath(f) for f in list_files(inputs)]
    started = time.time()
    pipeline_options = beam_options(workers, options)
    with writing_folder(out_dir) as tmp_dir, _beam_quiet():
        try:
            with beam.Pipeline(options=pipeline_options) as p:
                made, plan = _examples_graph(beam, p, files, config, tokenizer_path)
                _shards_and_summary(beam, made, plan, config, tmp_dir)
        except Exception as e:  # runners wrap a step's error in their own
            raise _input_error(e, inputs) from None
        manifest = _manifest(_read_summary(tmp_dir), config, tokenizer)
        tokenizer.save(tmp_dir)
        write_json(os.path.join(tmp_dir, MANIFEST_FILE), manifest)
    total = sum(s["examples"] for s in manifest["splits"].values())
    elapsed = time.time() - started
    logger.info(f"wrote {total} examples to {out_dir} in {elapsed:.1f}s "
        f"({total / max(elapsed, 1e-9):.0f} examples/s, Beam)")
    return manifest


def _manifest(summary, config, tokenizer):
    plan = summary["plan"]
    eval_docs = plan["eval"]
    manifest = {
        "format": FORMAT,
        "config": dataclasses.asdict(config),
        "tokenizer": tokenizer.file_name,
        "vocab_size": tokenizer.vocabulary_size,
        "corpus": plan["corpus"],
        "splits": {},
    }
    for split in ("train", "eval"):
        if split not in summary["sums"]:
            continue
        examples, real, masked, ones = summary["sums"][split]
        shards = sorted((s for s in summary["shards"] if s[0] == split), key=lambda s: s[1])
        manifest["splits"][split] = split_summary(
            examples, real, masked, ones, summary["ngrams"][split], [s[2] for s in shards],
            documents=len(eval_docs) if split == "eval"
            else plan["num_documents"] - len(eval_docs),
            eval_docs=eval_docs if split == "eval" else None,
        )
    return manifest


def _input_error(error, inputs):
    """Our own input errors (a bad file, no usable document) come back as one
    line, as the in-process path gives them; anything else as a BeamError
    with the runner's first line."""
    text = str(error)
    match = re.search(r"CorpusError: ([^\n\[]+)", text)
    if isinstance(error, CorpusError) or match:
        message = (match.group(1) if match else text.splitlines()[0]).strip()
        message = re.sub(r"\s*\[while running '[^']*'\]$", "", message)
        if message.startswith("no usable document"):
            message = f"{', '.join(map(str, inputs))}: {message}"
        return CorpusError(message)
    first = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    return BeamError(f"the Beam pipeline failed: {first}")
