"""EncoderPretrainer: the encoder with its MLM and SOP heads."""

import keras
from keras import ops

from albert_keras.heads.masked_lm_accuracy import MaskedLMAccuracy
from albert_keras.heads.masked_lm_head import MaskedLMHead
from albert_keras.heads.pretraining_losses import masked_lm_loss
from albert_keras.heads.pretraining_losses import sentence_order_loss
from albert_keras.heads.sentence_order_head import SentenceOrderHead
from albert_keras.layers.enhanced_mask_decoder import enhanced_mask_decode
from albert_keras.models.export_kind import ExportKind
from albert_keras.models.task_models.task_model import ENCODER_INPUTS
from albert_keras.models.task_models.task_model import TaskModel
from albert_keras.replicas import scale_for_replicas


@keras.saving.register_keras_serializable(package="albert_keras")
class EncoderPretrainer(TaskModel):
    """ALBERT with the masked-LM and sentence-order heads.

    Inputs: the encoder's three plus ``masked_positions`` ``[B, P]`` (int32).
    Outputs (dict): ``mlm_logits`` ``[B, P, V]`` (decoder tied to the word
    embeddings, plus an output bias) and ``sop_logits`` ``[B, 2]``, both
    float32.

    Training: ``fit`` takes ``(x, y)`` with ``x`` the four inputs and ``y`` a
    dict of ``masked_ids``, ``masked_weights`` and ``sop_label`` (see
    ``albert_keras.training.mlm_sop.split_features``). The loss is the original's:
    ``sum(w * CE(mlm)) / (sum(w) + 1e-5) + mean(CE(sop))``. Compile with an
    optimizer and no loss; ``fit`` reports ``masked_lm_accuracy``,
    ``masked_lm_loss``, ``sop_accuracy`` and ``sop_loss``.

    Args:
        encoder: an ``AlbertEncoder``.
        sop_dropout: dropout before the SOP classifier.
        dtype: a dtype policy; defaults to the encoder's.
        sentence_order: with the SOP head and loss; ``False`` is
            RoBERTa's MLM-only objective (no ``sop_logits``).
        enhanced_mask_decoder: decode the masked tokens with DeBERTa's
            enhanced mask decoder (absolute positions added before the last
            block, which runs twice; see
            ``albert_keras.layers.enhanced_mask_decoder``). The SOP head and
            the encoder's own outputs are unchanged.

    Example:
    >>> from albert_keras.presets import get_preset
    >>> from albert_keras.models.albert.albert_encoder import AlbertEncoder
    >>> pretrainer = EncoderPretrainer(AlbertEncoder(get_preset("albert_tiny")))
    >>> ids = keras.ops.ones((1, 16), "int32")
    >>> out = pretrainer({"token_ids": ids, "segment_ids": 0 * ids,
    ...                   "padding_mask": ids,
    ...                   "masked_positions": keras.ops.ones((1, 2), "int32")})
    >>> tuple(out["mlm_logits"].shape)
    (1, 2, 30000)
    """

    # TaskModel's export declaration: masked positions in, no text a
    # tokenizer in the graph could pack
    export_kind = ExportKind("mlm", outputs=("mlm_logits", "sop_logits"),
                             measures={"mlm_logits": "token_classes", "sop_logits": "classes"},
                             one_text=False, masked_positions=True, pipeline_tag="fill-mask")

    def __init__(self, encoder, sop_dropout=0.1, dtype=None, sentence_order=True,  # noqa: PLR0913 (Keras model arguments mirror get_config)
                 enhanced_mask_decoder=False, **kwargs):
        encoder, dtype = self._encoder_and_dtype(encoder, dtype)
        config = encoder.config

        # -- layers ------------------------------------------------------------
        mlm_head = MaskedLMHead(
            encoder.token_embedding,
            initializer_range=config.initializer_range,
            dtype=dtype,
            name="mlm_head",
            **encoder.mlm_head_options(),
        )
        sop_head = None
        if sentence_order:
            sop_head = SentenceOrderHead(
                dropout=sop_dropout,
                initializer_range=config.initializer_range,
                dtype=dtype,
                name="sop_head",
            )

        # -- functional graph ----------------------------------------------------
        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in ENCODER_INPUTS + ("masked_positions",)
        }
        encoded = encoder({name: inputs[name] for name in ENCODER_INPUTS})
        if enhanced_mask_decoder:
            hidden = encoder.encode({name: inputs[name] for name in ENCODER_INPUTS})[
                "hidden_states"][-2]
            rows = enhanced_mask_decode(encoder, hidden, inputs["padding_mask"],
                                        inputs["masked_positions"])
            outputs = {"mlm_logits": mlm_head(rows)}
        else:
            outputs = {"mlm_logits": mlm_head(encoded["sequence_output"],
                                              inputs["masked_positions"])}
        if sop_head is not None:
            outputs["sop_logits"] = sop_head(encoded["pooled_output"])
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.dtype_policy = dtype

        # -- attributes ----------------------------------------------------------
        self.encoder = encoder
        self.mlm_head = mlm_head
        self.sop_head = sop_head
        self.sop_dropout = sop_dropout
        self.sentence_order = bool(sentence_order)
        self.enhanced_mask_decoder = bool(enhanced_mask_decoder)
        self._pretraining_metrics = [
            MaskedLMAccuracy(),
            keras.metrics.Mean(name="masked_lm_loss"),
        ]
        if self.sentence_order:
            self._pretraining_metrics += [
                keras.metrics.SparseCategoricalAccuracy(name="sop_accuracy"),
                keras.metrics.Mean(name="sop_loss"),
            ]

    # -- forward pass ----------------------------------------------------------------
    def call(self, inputs, training=False):
        """The graph above, with the last block cut to the rows the heads read.

        The heads read only the masked positions and ``[CLS]``, so the last
        block's queries, output projection and FFN run on ``1 + P`` rows
        instead of ``S`` (``SharedEncoder``'s ``query_positions``). The
        numbers are the functional graph's; at the ALBERT-base shape (12
        layers, S=128, P=20) this is about 6% less work per step, at
        ``albert_tiny`` (4 layers) about 17%. The layers and their weights
        are the graph's own, so saving and loading are unchanged.
        """
        encoder = self.encoder
        if encoder.output_hidden_states:  # a caller wants every state: the plain graph
            return super().call(inputs, training=training)
        masked_positions = ops.cast(inputs["masked_positions"], "int32")
        padding_mask = inputs["padding_mask"]
        first = ops.zeros_like(masked_positions[:, :1])
        if self.enhanced_mask_decoder:
            # the last block on [CLS] only; the decoder takes the masked rows
            encoded = encoder.encode(inputs, training, query_positions=first)
            rows = encoded["sequence_output"]
            masked_rows = enhanced_mask_decode(encoder, encoded["hidden_states"][-2],
                                               padding_mask, masked_positions, training)
        else:
            cls_and_masked = ops.concatenate([first, masked_positions], axis=1)
            rows = encoder.encode(inputs, training,
                                  query_positions=cls_and_masked)["sequence_output"]
            masked_rows = rows[:, 1:]
        outputs = {"mlm_logits": self.mlm_head(masked_rows)}
        if self.sop_head is not None:
            outputs["sop_logits"] = self.sop_head(encoder.pool(rows), training=training)
        return outputs

    # -- training ------------------------------------------------------------------

    def pretraining_losses(self, y, y_pred):
        """Returns ``(masked_lm_loss, sop_loss)`` for one (per-replica) batch
        (``sop_loss`` is None without the sentence-order head)."""
        mlm_loss = masked_lm_loss(y["masked_ids"], y_pred["mlm_logits"], y["masked_weights"])
        if not self.sentence_order:
            return mlm_loss, None
        return mlm_loss, sentence_order_loss(y["sop_label"], y_pred["sop_logits"])

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        mlm_loss, sop_loss = self.pretraining_losses(y, y_pred)
        metric = metrics_by_name(self._pretraining_metrics)
        metric["masked_lm_loss"].update_state(mlm_loss)
        total = mlm_loss
        if sop_loss is not None:
            metric["sop_loss"].update_state(sop_loss)
            total = total + sop_loss
        if self.losses:  # regularizers, if a user adds any
            total = total + ops.sum(ops.stack(self.losses))
        return scale_for_replicas(total)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        metric = metrics_by_name(self._pretraining_metrics)
        metric["masked_lm_accuracy"].update_state(
            y["masked_ids"], y_pred["mlm_logits"], sample_weight=y["masked_weights"]
        )
        if self.sentence_order:
            metric["sop_accuracy"].update_state(y["sop_label"], y_pred["sop_logits"])
        return self.get_metrics_result()

    @property
    def metrics(self):
        return super().metrics + self._pretraining_metrics

    def get_config(self):
        return {**self._base_config(), "sop_dropout": self.sop_dropout,
                "sentence_order": self.sentence_order,
                "enhanced_mask_decoder": self.enhanced_mask_decoder}



def metrics_by_name(metrics):
    """``{name: metric}`` of a pretrainer's metric list (kept a list: the
    ``.keras`` files store it in that form)."""
    return {m.name: m for m in metrics}
