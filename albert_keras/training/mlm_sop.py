"""ALBERT's objective: masked-LM plus sentence-order prediction (or NSP).

The NSP ablation uses the same heads and loss: only the data differs (the
second segment is a random one half of the time instead of the swapped
next one), so it is this objective under another name.
"""

import keras
import numpy as np
import tensorflow as tf

from albert_keras.data.reader import pretraining_dataset
from albert_keras.heads.pretraining_losses import masked_lm_sums
from albert_keras.heads.pretraining_losses import sentence_order_sums
from albert_keras.models.pretrainers.encoder_pretrainer import EncoderPretrainer
from albert_keras.training.objective import Objective

X_KEYS = ("token_ids", "segment_ids", "padding_mask", "masked_positions")
Y_KEYS = ("masked_ids", "masked_weights", "sop_label")


def split_features(features):
    """Splits a pretraining feature dict into ``(x, y)`` for ``fit``."""
    return {k: features[k] for k in X_KEYS}, {k: features[k] for k in Y_KEYS}


class MlmSop(Objective):
    """Masked-LM + sentence-order prediction, the original's loss."""

    name = "mlm_sop"
    sentence_task = "sop"

    @property
    def needs_sentence_labels(self):
        return self.sentence_task is not None

    def split_features(self, features):
        return split_features(features)

    def monitor_for(self, has_eval):
        return "val_masked_lm_accuracy" if has_eval else "masked_lm_accuracy"

    def build_model(self, encoder, optimizer, steps_per_execution):
        model = EncoderPretrainer(encoder, sop_dropout=0.0,  # the original has none
                                 sentence_order=self.sentence_task is not None,
                                 enhanced_mask_decoder=bool(getattr(
                                     self.train_config, "enhanced_mask_decoder", False)))
        model.compile(optimizer=optimizer, steps_per_execution=steps_per_execution)
        return model

    def continue_from(self, source, model):
        if isinstance(source, EncoderPretrainer):
            model.mlm_head.set_weights(source.mlm_head.get_weights())
            if model.sop_head is not None and source.sop_head is not None:
                model.sop_head.set_weights(source.sop_head.get_weights())

    def evaluate(self, model, data_dir, split="eval", batch_size=64):
        ds = pretraining_dataset(data_dir, split, batch_size=batch_size, shuffle=False,
                                 repeat=False, drop_remainder=False, verify=False)
        correct = total = sop_correct = sop_total = 0
        mlm_loss = sop_loss = 0.0  # summed over the split, then divided
        forward = eval_forward(model)
        for batch in ds:
            x, y = split_features(batch)
            y = keras.tree.map_structure(np.asarray, y)
            out = keras.tree.map_structure(np.asarray, forward(x))
            sums = masked_lm_sums(out["mlm_logits"], y["masked_ids"], y["masked_weights"])
            mlm_loss += sums[0]
            correct += sums[1]
            total += sums[2]
            if "sop_logits" not in out:
                continue
            sums = sentence_order_sums(out["sop_logits"], y["sop_label"])
            sop_loss += sums[0]
            sop_correct += sums[1]
            sop_total += int(sums[2])
        metrics = {
            "masked_lm_accuracy": correct / max(total, 1),
            "masked_lm_loss": mlm_loss / max(total, 1),
            "masked_tokens": int(total),
        }
        if sop_total:
            metrics.update({"sop_accuracy": sop_correct / max(sop_total, 1),
                            "sop_loss": sop_loss / max(sop_total, 1), "examples": sop_total})
        return metrics

    def baselines(self, data_dir):
        return {"most_frequent_token_accuracy": most_frequent_token_baseline(data_dir)}

    def summary(self, metrics):
        line = (
            f"held-out masked_lm_accuracy {metrics['masked_lm_accuracy']:.4f} "
            f"(most-frequent-token baseline {metrics['most_frequent_token_accuracy']:.4f})"
        )
        if "sop_accuracy" in metrics:
            line += (f", {self.sentence_task}_accuracy {metrics['sop_accuracy']:.4f} on "
                     f"{metrics['examples']} examples")
        return line


class MlmNsp(MlmSop):
    """The NSP ablation: the same heads on next-sentence data."""

    name = "mlm_nsp"
    sentence_task = "nsp"


class Mlm(MlmSop):
    """RoBERTa's objective: masked-LM alone, no sentence task.

    Its own inputs are RoBERTa's (``--packing full_sentences``: whole
    sentences packed across documents); it also reads pair data (the two
    segments, with their segment ids, are one stretch of a document), and
    leaves the sentence-order label unused.
    """

    name = "mlm"
    sentence_task = None


def eval_forward(model):
    """``x -> outputs`` of ``model`` in inference mode, compiled once."""
    if keras.backend.backend() == "tensorflow":
        return tf.function(lambda x: model(x, training=False))

    def forward(x):  # a compiled forward pass on JAX/torch, from numpy
        return model.predict_on_batch(keras.tree.map_structure(np.asarray, x))

    return forward


def most_frequent_token_baseline(data_dir):
    """Held-out MLM accuracy of always predicting the most frequent training label."""

    def labels(split):
        ds = pretraining_dataset(data_dir, split, batch_size=256, shuffle=False,
                                 repeat=False, drop_remainder=False, verify=False)
        return np.concatenate(
            [b["masked_ids"].numpy()[b["masked_weights"].numpy() > 0] for b in ds])

    most_frequent = int(np.argmax(np.bincount(labels("train"))))
    return float(np.mean(labels("eval") == most_frequent))
