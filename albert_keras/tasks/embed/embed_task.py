"""``embed``: an encoder trained so that a query's vector is nearest the
vector of the text that answers it (in-batch negatives on text pairs)."""

import numpy as np

from albert_keras.tasks.embed import embed_run
from albert_keras.tasks.embed.pairs import corpus_of
from albert_keras.tasks.embed.pairs import pack_pairs
from albert_keras.tasks.embed.pairs import python_pairs
from albert_keras.tasks.embed.pairs import read_pairs
from albert_keras.tasks.retrieval_metrics import retrieval_scores
from albert_keras.tasks.retrieval_metrics import sts_spearman
from albert_keras.tasks.task import Task
from albert_keras.tasks.task import TaskData
from albert_keras.tasks.task import ValidationTexts


class Embed(Task):
    """Sentence embeddings from pairs (or triplets) in CSV/TSV/JSONL.

    A row's anchor must find its positive among every positive (and hard
    negative) of its batch; scored by retrieval: each anchor of a file
    against the file's distinct positives and negatives, nDCG@10 the main
    metric (sentence-transformers' ``InformationRetrievalEvaluator``'s); a
    file with a ``score`` column (STS) by Spearman's correlation of each
    pair's cosine with its score (its ``EmbeddingSimilarityEvaluator``'s).
    """

    name = "embed"
    # no task object: the folder's model is a ``SentenceEmbedder``, which
    # ``TextEmbedder`` and ``albert-keras embed`` read
    instead = ("an embed folder embeds texts with `albert-keras embed` (TextEmbedder."
               "from_preset) and is scored on pairs with `albert-keras evaluate`")
    head_fields = ("pooling",)

    def read(self, path, spec, tokenizer, require_labels=True):
        examples = read_pairs(path, spec.anchor_column, spec.positive_column,
                              spec.negative_column)
        return self.from_examples(examples, spec, tokenizer), spec

    def from_python(self, x, y, spec, tokenizer, name="x"):
        """``x``: ``(anchors, positives)`` or ``(anchors, positives, negatives)``."""
        if y is not None or not isinstance(x, (tuple, list)) or len(x) not in (2, 3):
            raise ValueError(f"{name}: (anchors, positives) or (anchors, positives, "
                             "negatives), and no labels")
        return self.from_examples(python_pairs(*x), spec, tokenizer), spec

    def from_examples(self, examples, spec, tokenizer):
        """The ``TaskData`` of ``PairExamples``: each column packed alone;
        ``y`` says that row ``i``'s positive answers anchor ``i``."""
        lengths = []
        x = pack_pairs(tokenizer, examples, spec.sequence_length, spec.truncate, lengths)
        return TaskData(x, {"positive": np.arange(len(examples), dtype=np.int32)},
                        extra={"examples": examples, "lengths": np.asarray(lengths)})

    def main_metric(self, spec):
        return "ndcg@10"

    def metric_for(self, spec, data):
        """Scored pairs (STS) choose the epoch by Spearman's correlation."""
        return "spearman" if data.extra["examples"].scores is not None else "ndcg@10"

    def outputs(self, model, data, batch_size=64, length_buckets=True):
        """``{column: [N, D] vectors}`` of each column's texts, from the
        embedder (of an ``InBatchNegatives`` in training)."""
        embedder = getattr(model, "embedder", model)
        return {name: np.asarray(super(Embed, self).outputs(
                    embedder, TaskData(x), batch_size, length_buckets)["embeddings"], np.float32)
                for name, x in data.x.items()}

    def score(self, spec, data, outputs):
        """Retrieval over the file: each anchor against the distinct
        positives and negatives, its own positive the relevant one."""
        examples = data.extra["examples"]
        if examples.scores is not None:
            return {"spearman": sts_spearman(outputs["anchor"], outputs["positive"],
                                             examples.scores), "pairs": len(examples)}
        texts, relevant = corpus_of(examples)
        first = {}
        for name in ("positive", "negative"):
            for row, text in enumerate(examples.columns.get(name, ())):
                first.setdefault(text, (name, row))
        corpus = np.stack([outputs[name][row] for name, row in (first[t] for t in texts)])
        return {**retrieval_scores(outputs["anchor"], corpus, relevant),
                "corpus": len(texts)}

    def subset(self, data, examples):
        x = {name: {k: v[examples] for k, v in part.items()} for name, part in data.x.items()}
        kept = data.extra["examples"].take(examples)
        return TaskData(x, {"positive": np.arange(len(kept), dtype=np.int32)},
                        extra={"examples": kept})

    def validation_texts(self, path, spec, tokenizer):
        """The export checks its file on a pairs file's anchors and positives."""
        examples = read_pairs(path, spec.anchor_column, spec.positive_column,
                              spec.negative_column)
        return ValidationTexts(examples.columns["anchor"] + examples.columns["positive"])

    def finetune(self, run):
        """The whole ``finetune`` of an embedder (``embed_run.finetune_embedder``)."""
        return embed_run.finetune_embedder(self, run)

    def evaluate_folder(self, folder, path, batch_size=64, length_buckets=True):
        """Retrieval scores of an embed folder on a pairs file."""
        return embed_run.evaluate_embedder(self, folder, path, batch_size, length_buckets)
