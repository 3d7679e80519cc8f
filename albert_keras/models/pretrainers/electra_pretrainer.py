"""ElectraPretrainer: ELECTRA's generator and discriminator on our encoder."""

import keras
from keras import ops

from albert_keras.heads.masked_lm_accuracy import MaskedLMAccuracy
from albert_keras.heads.masked_lm_head import MaskedLMHead
from albert_keras.heads.pretraining_losses import masked_lm_loss
from albert_keras.heads.pretraining_losses import sentence_order_loss
from albert_keras.heads.replaced_token_head import ReplacedTokenHead
from albert_keras.heads.sentence_order_head import SentenceOrderHead
from albert_keras.layers.enhanced_mask_decoder import enhanced_mask_decode
from albert_keras.models.backbone import rebuilt
from albert_keras.models.pretrainers.encoder_pretrainer import metrics_by_name
from albert_keras.replicas import scale_for_replicas
from albert_keras.replicas import tf_replica_context
from albert_keras.replicas import weighted_mean

SHARING = ("tied", "gdes", "none")


def generator_config(config, fraction=0.25):
    """The generator's config: ``config`` (of any family) narrowed by ``fraction``.

    ELECTRA scales the hidden size, the FFN size and the number of heads by
    one multiplier and keeps the depth; its paper found generators 1/4 to
    1/2 the discriminator's size best and used 1/4 for ELECTRA-Small and
    -Large. The embedding width stays the discriminator's, so the two can
    share the word table.
    """
    heads = max(1, round(config.num_attention_heads * fraction))
    hidden = max(heads, round(config.hidden_size * fraction / heads) * heads)
    return type(config).from_dict({
        **config.to_dict(),
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "intermediate_size": max(1, round(config.intermediate_size * fraction)),
    })


def _check_pair(encoder, generator, embedding_sharing):
    """Refuses a generator whose vocabulary or embedding width differs from
    the discriminator's, and an unknown embedding sharing."""
    if embedding_sharing not in SHARING:
        raise ValueError(f"embedding_sharing must be one of {SHARING}, "
                         f"got {embedding_sharing!r}")
    d, g = encoder.config, generator.config
    if (d.vocab_size, d.embedding_size) != (g.vocab_size, g.embedding_size):
        raise ValueError(
            f"the generator's vocabulary and embedding width ({g.vocab_size}, "
            f"{g.embedding_size}) must equal the discriminator's "
            f"({d.vocab_size}, {d.embedding_size})")


@keras.saving.register_keras_serializable(package="albert_keras")
class ElectraPretrainer(keras.Model):
    """Replaced-token detection (ELECTRA) with a small MLM generator.

    The generator fills the masked positions of the input with tokens
    sampled from its own MLM distribution (not its argmax); the
    discriminator reads the filled-in sequence and says, for every token,
    whether it was replaced. A sampled token equal to the original counts as
    original. The loss is ``generator MLM + rtd_weight * discriminator
    loss`` (plus SOP on the discriminator's ``[CLS]`` when ``sentence_order``); the
    generator's samples carry no gradient, as in ELECTRA.

    With ``rtd_mlm_weight > 0`` the discriminator also recovers the original
    token at every masked position (an MLM head on its last layer, decoding
    with its word table), weighted by ``rtd_mlm_weight``: COCO-LM's
    corrective language modelling (Meng et al. 2021) without its copy
    mechanism. ELECTRA has no such loss (weight 0, the default). On our
    small-compute runs the pure discriminator's last layers give every text
    almost the same mean vector; a token-recovery loss on them asks them to
    keep what the token and its context are.

    Word-table sharing (``embedding_sharing``):

    * ``tied``: one table, trained by both losses (ELECTRA). The
      discriminator owns it; the generator reads it.
    * ``gdes``: DeBERTaV3's gradient-disentangled sharing. The generator
      owns the table ``E_G``; the discriminator reads
      ``stop_gradient(E_G) + E_delta``, where ``E_delta`` (its own table,
      zero at the start) is trained by the discriminator's loss alone, so
      the MLM and RTD gradients do not pull one table two ways.
    * ``none``: two tables.

    Inputs: the encoder's three, ``masked_positions`` ``[B, P]`` and
    ``masked_ids`` (the originals there) and ``masked_weights``. Outputs:
    ``mlm_logits`` ``[B, P, V]`` (generator), ``rtd_logits`` and
    ``rtd_labels`` ``[B, S]`` (1: replaced), the discriminator's input
    ``replaced_ids`` and, with ``sentence_order``, ``sop_logits``.

    ``standalone_encoder()`` gives the discriminator as a plain
    ``AlbertEncoder`` (its word table folded in): what fine-tuning uses.

    Args:
        encoder: the discriminator's ``AlbertEncoder``.
        generator: the generator's ``AlbertEncoder`` (same vocabulary and
            embedding width; see ``generator_config``).
        embedding_sharing: ``tied``, ``gdes`` or ``none``.
        rtd_weight: lambda, the discriminator loss weight (ELECTRA: 50).
        rtd_mlm_weight: weight of the discriminator's own masked-LM loss
            (0: none, ELECTRA).
        sentence_order: add sentence-order prediction on the discriminator
            (``EncoderPretrainer``'s switch of the same name).
        temperature: of the generator's sampling distribution.
        seed: the sampling seed.
        enhanced_mask_decoder: the generator decodes its masked tokens with
            DeBERTa's enhanced mask decoder
            (``albert_keras.layers.enhanced_mask_decoder``).

    Example:
    >>> from albert_keras.presets import get_preset
    >>> from albert_keras.models.albert.albert_encoder import AlbertEncoder
    >>> config = get_preset("albert_tiny", vocab_size=100)
    >>> model = ElectraPretrainer(
    ...     AlbertEncoder(config), AlbertEncoder(generator_config(config)))
    >>> ids = keras.ops.ones((1, 16), "int32")
    >>> pos = keras.ops.convert_to_tensor([[1, 2]], "int32")  # distinct positions
    >>> out = model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids,
    ...              "masked_positions": pos, "masked_ids": pos,
    ...              "masked_weights": keras.ops.ones((1, 2))})
    >>> tuple(out["rtd_logits"].shape)
    (1, 16)
    """

    def __init__(self, encoder, generator, embedding_sharing="tied", rtd_weight=50.0,  # noqa: PLR0913 (a model constructor: its arguments mirror get_config)
                 sentence_order=False, temperature=1.0, seed=0, rtd_mlm_weight=0.0,
                 enhanced_mask_decoder=False, **kwargs):
        if isinstance(encoder, dict):
            encoder = keras.saving.deserialize_keras_object(encoder)
        if isinstance(generator, dict):
            generator = keras.saving.deserialize_keras_object(generator)
        _check_pair(encoder, generator, embedding_sharing)
        super().__init__(**kwargs)
        self.encoder = encoder
        self.generator = generator
        self.embedding_sharing = embedding_sharing
        self.rtd_weight = float(rtd_weight)
        self.rtd_mlm_weight = float(rtd_mlm_weight)
        self.sentence_order = bool(sentence_order)
        self.temperature = float(temperature)
        self.seed = int(seed)
        self.enhanced_mask_decoder = bool(enhanced_mask_decoder)
        if embedding_sharing == "tied":
            # the generator's own table is never read (nor trained)
            generator.token_embedding.trainable = False
        self._make_heads()
        self.seed_generator = keras.random.SeedGenerator(self.seed, name="sampling_seed")
        # Tracked as a weight, so checkpoints carry the sampling state and a
        # resumed run draws what an uninterrupted one would (Keras saves no
        # SeedGenerator state by itself).
        self.sampling_state = self.seed_generator.state
        self._build_heads()
        self.built = True
        self._pretraining_metrics = self._make_metrics()

    def _make_heads(self):
        """The generator's MLM head, the replaced-token head and the optional
        discriminator MLM and SOP heads."""
        encoder, d, g = self.encoder, self.encoder.config, self.generator.config
        self.mlm_head = MaskedLMHead(
            self._generator_table_layer(), activation=g.hidden_act,
            layer_norm_eps=g.layer_norm_eps, initializer_range=g.initializer_range,
            dtype=encoder.dtype_policy, name="mlm_head")
        self.rtd_head = ReplacedTokenHead(
            d.hidden_size, activation=d.hidden_act, initializer_range=d.initializer_range,
            dtype=encoder.dtype_policy, name="rtd_head")
        self.discriminator_mlm_head = None
        if self.rtd_mlm_weight > 0:
            self.discriminator_mlm_head = MaskedLMHead(
                self.encoder.token_embedding, activation=d.hidden_act,
                layer_norm_eps=d.layer_norm_eps, initializer_range=d.initializer_range,
                dtype=encoder.dtype_policy, name="discriminator_mlm_head")
        self.sop_head = None
        if self.sentence_order:
            self.sop_head = SentenceOrderHead(
                dropout=0.0, initializer_range=d.initializer_range,
                dtype=encoder.dtype_policy, name="sop_head")

    def _make_metrics(self):
        """The pretraining metrics, in the order fit's logs show them."""
        metrics = [
            MaskedLMAccuracy(),
            keras.metrics.Mean(name="masked_lm_loss"),
            keras.metrics.BinaryAccuracy(name="rtd_accuracy", threshold=0.0),
            keras.metrics.Mean(name="rtd_loss"),
        ]
        if self.discriminator_mlm_head is not None:
            metrics += [
                MaskedLMAccuracy(name="discriminator_masked_lm_accuracy"),
                keras.metrics.Mean(name="discriminator_masked_lm_loss"),
            ]
        if self.sentence_order:
            metrics += [
                keras.metrics.SparseCategoricalAccuracy(name="sop_accuracy"),
                keras.metrics.Mean(name="sop_loss"),
            ]
        return metrics

    def _build_heads(self):
        d, g = self.encoder.config, self.generator.config
        self.mlm_head.build((None, None, g.hidden_size))
        self.rtd_head.build((None, None, d.hidden_size))
        if self.discriminator_mlm_head is not None:
            self.discriminator_mlm_head.build((None, None, d.hidden_size))
        if self.sop_head is not None:
            self.sop_head.build((None, d.hidden_size))

    @property
    def config(self):
        """The discriminator's config (the model fine-tuning uses)."""
        return self.encoder.config

    # -- word tables -----------------------------------------------------------------
    def _generator_table_layer(self):
        if self.embedding_sharing == "tied":
            return self.encoder.token_embedding
        return self.generator.token_embedding

    def _generator_table(self):
        return self._generator_table_layer().embeddings

    def _discriminator_table(self):
        own = self.encoder.token_embedding.embeddings
        if self.embedding_sharing == "gdes":
            return ops.stop_gradient(self.generator.token_embedding.embeddings) + own
        return own

    def standalone_encoder(self):
        """The discriminator as a plain encoder with its own table."""
        if self.embedding_sharing != "gdes":
            return self.encoder
        encoder = rebuilt(self.encoder)
        encoder.set_weights(self.encoder.get_weights())
        encoder.token_embedding.embeddings.assign(
            ops.convert_to_numpy(self._discriminator_table()))
        return encoder

    def standalone_discriminator(self):
        """A ``TokenDiscriminator`` (encoder with the table folded in, and
        the RTD head): what exports to HF ``ElectraForPreTraining``."""
        from albert_keras.models.pretrainers.token_discriminator import TokenDiscriminator

        model = TokenDiscriminator(self.standalone_encoder())
        model.rtd_head.set_weights(self.rtd_head.get_weights())
        return model

    def standalone_generator(self):
        """The generator as an MLM-only ``EncoderPretrainer`` with its own word
        table: what exports to HF ``ElectraForMaskedLM``."""
        from albert_keras.models.pretrainers.encoder_pretrainer import EncoderPretrainer

        source = self.generator
        encoder = rebuilt(source)
        encoder.set_weights(source.get_weights())
        encoder.token_embedding.embeddings.assign(
            ops.convert_to_numpy(self._generator_table()))
        model = EncoderPretrainer(encoder, sentence_order=False,
                                 enhanced_mask_decoder=self.enhanced_mask_decoder)
        model.mlm_head.copy_own_weights(self.mlm_head)
        return model

    # -- forward pass ----------------------------------------------------------------
    def generator_logits(self, inputs, training=False):
        """The generator's MLM logits ``[B, P, V]`` at ``masked_positions``
        (the encoder's three inputs and ``masked_positions``): what
        ``fill-mask`` shows for an ``rtd`` model."""
        gen = self.generator
        padding_mask = ops.cast(inputs["padding_mask"], "int32")
        positions = ops.cast(inputs["masked_positions"], "int32")
        table = self._generator_table() if self.embedding_sharing == "tied" else None
        if self.enhanced_mask_decoder:
            hidden = gen.encode(inputs, training, token_table=table)["hidden_states"][-2]
            rows = enhanced_mask_decode(gen, hidden, padding_mask, positions, training)
        else:  # the last block on the masked rows only
            rows = gen.encode(inputs, training, token_table=table,
                              query_positions=positions)["sequence_output"]
        return self.mlm_head(rows)

    def call(self, inputs, training=False):
        token_ids = ops.cast(inputs["token_ids"], "int32")
        segment_ids = ops.cast(inputs["segment_ids"], "int32")
        padding_mask = ops.cast(inputs["padding_mask"], "int32")
        positions = ops.cast(inputs["masked_positions"], "int32")
        weights = ops.cast(inputs["masked_weights"] > 0, "int32")
        originals = ops.cast(inputs["masked_ids"], "int32")

        mlm_logits = self.generator_logits(inputs, training=training)

        # samples from the generator's distribution, without gradient
        batch, predictions = ops.shape(positions)[0], ops.shape(positions)[1]
        flat = ops.reshape(ops.stop_gradient(mlm_logits), (-1, ops.shape(mlm_logits)[-1]))
        sampled = ops.reshape(self._sample(flat / self.temperature), (batch, predictions))
        sampled = ops.where(weights > 0, sampled, originals)

        # the original sequence with the samples put in at the masked positions
        # (a one-hot scatter: the same on every backend, and P x S is small)
        length = ops.shape(token_ids)[1]
        at = ops.one_hot(positions, length, dtype="int32") * weights[:, :, None]  # [B, P, S]
        hit = ops.minimum(ops.sum(at, axis=1), 1)  # [B, S]
        original_ids = token_ids * (1 - hit) + ops.sum(at * originals[:, :, None], axis=1)
        replaced_ids = token_ids * (1 - hit) + ops.sum(at * sampled[:, :, None], axis=1)
        rtd_labels = ops.cast(ops.not_equal(replaced_ids, original_ids), "int32") * padding_mask

        # discriminator: every token
        replaced = {"token_ids": replaced_ids, "segment_ids": segment_ids,
                    "padding_mask": padding_mask}
        sequence = self.encoder.encode(replaced, training,
                                       token_table=self._discriminator_table())["sequence_output"]
        outputs = {
            "mlm_logits": mlm_logits,
            "rtd_logits": self.rtd_head(sequence),
            "rtd_labels": rtd_labels,
            "replaced_ids": replaced_ids,
        }
        if self.discriminator_mlm_head is not None:
            outputs["discriminator_mlm_logits"] = self.discriminator_mlm_head(
                sequence, positions, token_table=self._discriminator_table())
        if self.sop_head is not None:
            outputs["sop_logits"] = self.sop_head(self.encoder.pool(sequence), training=training)
        return outputs

    def _sample(self, logits):
        """One id per row of ``logits`` ``[N, V]``, from its softmax."""
        replica = tf_replica_context()
        if replica is None:
            return keras.random.categorical(logits, 1, seed=self.seed_generator, dtype="int32")
        # Under tf.distribute every replica reads the one seed state: fold the
        # replica's id into it, or all replicas would draw the same noise.
        import tensorflow as tf

        seed = tf.cast(self.seed_generator.next(), tf.int64)
        seed = seed + tf.cast(tf.stack([0, replica.replica_id_in_sync_group + 1]), tf.int64)
        return tf.random.stateless_categorical(logits, 1, seed=seed, dtype=tf.int32)

    # -- training ------------------------------------------------------------------
    def pretraining_losses(self, x, y, y_pred):
        """``{"masked_lm_loss", "rtd_loss"[, "discriminator_masked_lm_loss"]
        [, "sop_loss"]}`` for one batch."""
        mlm_loss = masked_lm_loss(y["masked_ids"], y_pred["mlm_logits"], y["masked_weights"])
        mask = ops.cast(x["padding_mask"], "float32")
        labels = ops.cast(y_pred["rtd_labels"], "float32")
        rtd = keras.losses.binary_crossentropy(
            labels[..., None], y_pred["rtd_logits"][..., None], from_logits=True)
        rtd_loss = weighted_mean(rtd, mask)
        losses = {"masked_lm_loss": mlm_loss, "rtd_loss": rtd_loss}
        if self.discriminator_mlm_head is not None:
            losses["discriminator_masked_lm_loss"] = masked_lm_loss(
                y["masked_ids"], y_pred["discriminator_mlm_logits"], y["masked_weights"])
        if self.sentence_order:
            losses["sop_loss"] = sentence_order_loss(y["sop_label"], y_pred["sop_logits"])
        return losses

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        losses = self.pretraining_losses(x, y, y_pred)
        metric = metrics_by_name(self._pretraining_metrics)
        metric["masked_lm_loss"].update_state(losses["masked_lm_loss"])
        metric["rtd_loss"].update_state(losses["rtd_loss"])
        total = losses["masked_lm_loss"] + self.rtd_weight * losses["rtd_loss"]
        if self.discriminator_mlm_head is not None:
            metric["discriminator_masked_lm_loss"].update_state(
                losses["discriminator_masked_lm_loss"])
            total = total + self.rtd_mlm_weight * losses["discriminator_masked_lm_loss"]
        if self.sentence_order:
            metric["sop_loss"].update_state(losses["sop_loss"])
            total = total + losses["sop_loss"]
        if self.losses:
            total = total + ops.sum(ops.stack(self.losses))
        return scale_for_replicas(total)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        by_name = metrics_by_name(self._pretraining_metrics)
        by_name["masked_lm_accuracy"].update_state(y["masked_ids"], y_pred["mlm_logits"],
                                                   sample_weight=y["masked_weights"])
        by_name["rtd_accuracy"].update_state(
            ops.cast(y_pred["rtd_labels"], "float32"), y_pred["rtd_logits"],
            sample_weight=ops.cast(x["padding_mask"], "float32"))
        if self.discriminator_mlm_head is not None:
            by_name["discriminator_masked_lm_accuracy"].update_state(
                y["masked_ids"], y_pred["discriminator_mlm_logits"],
                sample_weight=y["masked_weights"])
        if self.sentence_order:
            by_name["sop_accuracy"].update_state(y["sop_label"], y_pred["sop_logits"])
        return self.get_metrics_result()

    @property
    def metrics(self):
        return super().metrics + self._pretraining_metrics

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "generator": keras.saving.serialize_keras_object(self.generator),
            "embedding_sharing": self.embedding_sharing,
            "rtd_weight": self.rtd_weight,
            "sentence_order": self.sentence_order,
            "enhanced_mask_decoder": self.enhanced_mask_decoder,
            "temperature": self.temperature,
            "seed": self.seed,
            "rtd_mlm_weight": self.rtd_mlm_weight,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "sop" in config:  # files written before the switch took EncoderPretrainer's name
            config["sentence_order"] = config.pop("sop")
        return cls(**config)
