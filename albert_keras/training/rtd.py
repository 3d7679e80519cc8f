"""ELECTRA's objective: replaced-token detection with a small MLM generator.

The discriminator learns from every token of the sequence, not the 15%
that are masked, which is why ELECTRA gains most at small compute. The data
folders are the MLM ones: the stored (or dynamic) masks say where the
generator fills in.
"""

import keras
import numpy as np

from albert_keras.data.reader import pretraining_dataset
from albert_keras.heads.pretraining_losses import masked_lm_sums
from albert_keras.models.backbone import rebuilt
from albert_keras.models.pretrainers.electra_pretrainer import ElectraPretrainer
from albert_keras.models.pretrainers.electra_pretrainer import generator_config
from albert_keras.training.mlm_sop import eval_forward
from albert_keras.training.mlm_sop import most_frequent_token_baseline
from albert_keras.training.objective import Objective
from albert_keras.training.pretrain_config import PretrainConfig

X_KEYS = ("token_ids", "segment_ids", "padding_mask", "masked_positions", "masked_ids",
          "masked_weights")
Y_KEYS = ("masked_ids", "masked_weights", "sop_label")


def split_features(features):
    """A pretraining feature dict -> ``(x, y)``: the generator's targets are
    also inputs, because the discriminator's labels are made from them."""
    return {k: features[k] for k in X_KEYS}, {k: features[k] for k in Y_KEYS}


# Below this held-out AUC the discriminator ranks replaced tokens no better
# than chance: --recipe deberta_v3 ended at exactly 0.5 (one answer for every
# token) on the built-in corpus, while rtd with ALBERT's encoder reaches 0.8.
_CHANCE_AUC = 0.55


def _untrained_discriminator_note(auc):
    if auc >= _CHANCE_AUC:
        return ""
    return (f". The discriminator has not learned (rtd_auc {auc:.2f}, chance is 0.5): "
            "its encoder is no better a start for fine-tuning than the generator's "
            "tables; try a lower --learning-rate or more --steps")


class Rtd(Objective):
    """Generator MLM + ``rtd_weight`` x replaced-token detection (+ SOP)."""

    name = "rtd"

    def _option(self, name):
        """A setting of the run (``PretrainConfig``'s default when the
        objective was made without one), so each default is written once."""
        return getattr(self.train_config or PretrainConfig(), name)

    @property
    def needs_sentence_labels(self):
        return bool(self._option("rtd_sop"))

    def split_features(self, features):
        return split_features(features)

    def monitor_for(self, has_eval):
        # The generator's MLM accuracy measures what the run has learned;
        # RTD accuracy rises as the generator gets better too, so it is no
        # fixed yardstick across epochs.
        return "val_masked_lm_accuracy" if has_eval else "masked_lm_accuracy"

    def build_model(self, encoder, optimizer, steps_per_execution):
        sharing = self._option("embedding_sharing")
        generator = rebuilt(
            encoder, generator_config(encoder.config, self._option("generator_size")))
        if sharing == "gdes":
            # The generator owns the word table (the discriminator's as it is,
            # for a run continued from a trained encoder); the discriminator
            # keeps a residual that starts at zero.
            table = encoder.token_embedding.embeddings
            generator.token_embedding.embeddings.assign(table)
            # ops.zeros, not ops.zeros_like(table): JAX's zeros_like cannot
            # read a Keras Variable's dtype and fails
            table.assign(keras.ops.zeros(table.shape, dtype=table.dtype))
        model = ElectraPretrainer(
            encoder, generator, embedding_sharing=sharing,
            rtd_weight=self._option("rtd_weight"), sentence_order=self._option("rtd_sop"),
            seed=self._option("seed"), rtd_mlm_weight=self._option("rtd_mlm_weight"),
            enhanced_mask_decoder=bool(self._option("enhanced_mask_decoder")))
        model.compile(optimizer=optimizer, steps_per_execution=steps_per_execution)
        return model

    def continue_from(self, source, model):
        if not isinstance(source, ElectraPretrainer):
            return
        if source.embedding_sharing == model.embedding_sharing:
            try:  # the same generator and heads: keep them all
                model.set_weights(source.get_weights())
                return
            except ValueError:  # other heads (--rtd-sop, --rtd-mlm-weight) or generator size
                pass
            try:
                model.generator.set_weights(source.generator.get_weights())
            except ValueError:  # another generator size: it starts afresh on the folded table
                pass
            else:  # under gdes the residual that goes with the generator's table
                model.encoder.set_weights(source.encoder.get_weights())
        # Word tables are laid out differently under each sharing (one table;
        # the generator's plus a residual; two), and build_model derived this
        # run's from the discriminator's folded table. So across sharings
        # only what owns no table carries over, and a generator (whose table
        # would not match) starts afresh.
        for part in ("rtd_head", "sop_head"):
            ours, theirs = getattr(model, part), getattr(source, part)
            if ours is not None and theirs is not None:
                ours.set_weights(theirs.get_weights())
        for part in ("mlm_head", "discriminator_mlm_head"):
            ours, theirs = getattr(model, part), getattr(source, part, None)
            if ours is not None and theirs is not None:
                try:
                    ours.copy_own_weights(theirs)
                except ValueError:  # another generator width: the head starts afresh
                    pass

    def evaluate(self, model, data_dir, split="eval", batch_size=64):
        ds = pretraining_dataset(data_dir, split, batch_size=batch_size, shuffle=False,
                                 repeat=False, drop_remainder=False, verify=False)
        forward = eval_forward(model)
        auc = keras.metrics.AUC(from_logits=True, num_thresholds=1000)
        correct = total = rtd_correct = tokens = replaced = 0.0
        mlm_loss = rtd_loss = recovered = 0.0
        for batch in ds:
            x, y = split_features(batch)
            out = keras.tree.map_structure(np.asarray, forward(x))
            sums = masked_lm_sums(out["mlm_logits"], y["masked_ids"], y["masked_weights"])
            mlm_loss += sums[0]
            correct += sums[1]
            total += sums[2]
            if "discriminator_mlm_logits" in out:
                recovered += masked_lm_sums(out["discriminator_mlm_logits"], y["masked_ids"],
                                            y["masked_weights"])[1]
            mask = np.asarray(x["padding_mask"]).astype(bool)
            rtd_logits, rtd_labels = out["rtd_logits"][mask], out["rtd_labels"][mask]
            rtd_correct += float(((rtd_logits > 0) == (rtd_labels > 0)).sum())
            # log(1 + exp(-z)) for the true class, stably
            signed = np.where(rtd_labels > 0, rtd_logits, -rtd_logits)
            rtd_loss += float(np.logaddexp(0.0, -signed).sum())
            tokens += mask.sum()
            replaced += float(rtd_labels.sum())
            auc.update_state(rtd_labels, rtd_logits)
        metrics = {
            "masked_lm_accuracy": correct / max(total, 1),
            "masked_lm_loss": mlm_loss / max(total, 1),
            "rtd_accuracy": rtd_correct / max(tokens, 1),
            "rtd_loss": rtd_loss / max(tokens, 1),
            "rtd_auc": float(auc.result()),
            "replaced_fraction": replaced / max(tokens, 1),
            "masked_tokens": int(total),
            "tokens": int(tokens),
        }
        if getattr(model, "discriminator_mlm_head", None) is not None:
            # what the discriminator recovers at the masked positions, which
            # hold the generator's samples: a harder task than the generator's
            metrics["discriminator_masked_lm_accuracy"] = recovered / max(total, 1)
        return metrics

    def baselines(self, data_dir):
        return {"most_frequent_token_accuracy": most_frequent_token_baseline(data_dir)}

    def summary(self, metrics):
        return (
            f"held-out rtd_accuracy {metrics['rtd_accuracy']:.4f} (all-original baseline "
            f"{1 - metrics['replaced_fraction']:.4f}), rtd_auc {metrics['rtd_auc']:.4f}, "
            f"generator masked_lm_accuracy {metrics['masked_lm_accuracy']:.4f} "
            f"(most-frequent-token baseline {metrics['most_frequent_token_accuracy']:.4f})"
            + (f", discriminator masked_lm_accuracy "
               f"{metrics['discriminator_masked_lm_accuracy']:.4f}"
               if "discriminator_masked_lm_accuracy" in metrics else "")
            + _untrained_discriminator_note(metrics["rtd_auc"])
        )
