"""What every model on an encoder shares (the task models and the
pretrainer): the encoder, its inputs, its config."""

import json

import keras

from albert_keras.layers.quantized_dense import make_dense
from albert_keras.models.backbone import is_backbone

ENCODER_INPUTS = ("token_ids", "segment_ids", "padding_mask")


def head_dense(encoder, units, dtype, name):
    """A new head's dense layer: the original's truncated-normal initializer,
    and fake quantization when the encoder is quantization-aware."""
    return make_dense(
        units,
        quantize_aware=encoder.quantize_aware,
        kernel_initializer=keras.initializers.TruncatedNormal(
            stddev=encoder.config.initializer_range
        ),
        dtype=dtype,
        name=name,
    )


class TaskModel(keras.Model):
    """Base of the models with heads: a functional model around ``encoder``.

    Subclasses build their graph, call ``super().__init__(inputs, outputs)``,
    set ``self.encoder`` and add their own arguments to ``get_config``.

    Every task model also takes ``task_spec``: what reading, scoring and
    export need to know about its task (the ``task.json`` of a fine-tuned
    folder: task, labels, sequence length, columns, truncation), as a dict.
    Fine-tuning sets it; a ``.keras`` file carries it, and its tokenizer
    through the encoder, so a model file alone can be exported or run.
    """

    # What the exports, their validation, app metadata and the model card
    # read (an ``ExportKind``). Each task model declares it (a subclass
    # inherits it); a model without a kind does not export.
    export_kind = None
    # What an HF folder of the model is: the task of its ``...For<Task>``
    # class, and the head's dense layers by canonical name (the name a
    # checkpoint table maps) -> layer name. None: no HF class.
    hf_task = None
    head_layers = {}

    @property
    def reads_only_cls(self):
        """Whether the output depends on the last block's ``[CLS]`` row alone
        (the export then computes only that row there)."""
        return False

    def __init__(self, *args, task_spec=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.task_spec = task_spec

    def call(self, inputs, training=None, mask=None, **kwargs):
        # A model that reads only [CLS] has its encoder compute that row alone
        # in the last block: the same outputs, about 1/L fewer matrix products
        # in fitting and prediction (HF's classes compute every row).
        encoder = self.__dict__.get("encoder")
        if encoder is None or not hasattr(encoder, "reading_first_row") or \
                not self.reads_only_cls:
            return super().call(inputs, training=training, mask=mask, **kwargs)
        with encoder.reading_first_row():
            return super().call(inputs, training=training, mask=mask, **kwargs)

    @property
    def task_spec(self):
        """The task description (a dict), or None for a model built by hand."""
        text = self.__dict__.get("_task_spec_json")
        return None if text is None else json.loads(text)

    @task_spec.setter
    def task_spec(self, spec):
        if spec is not None and not isinstance(spec, dict):
            raise TypeError(f"task_spec must be a dict, got {type(spec).__name__}")
        # kept as JSON text: Keras would wrap a dict attribute in its trackers
        self._task_spec_json = None if spec is None else json.dumps(spec, sort_keys=True)

    def default_task_spec(self, source):
        """The task dict an export reads for this model when it carries none
        (a model built by hand), or None; ``source`` names it in messages."""
        return None

    @property
    def labels(self):
        """The class names by id (an empty tuple when unknown or not a classifier)."""
        return tuple((self.task_spec or {}).get("labels") or ())

    @property
    def tokenizer(self):
        """The encoder's host-side tokenizer, or None (see ``AlbertEncoder.tokenizer``)."""
        return self.encoder.tokenizer

    @staticmethod
    def _encoder_and_dtype(encoder, dtype):
        if isinstance(encoder, dict):
            encoder = keras.saving.deserialize_keras_object(encoder)
        if not is_backbone(encoder):
            raise TypeError(f"encoder must be an encoder (such as AlbertEncoder), got "
                            f"{type(encoder).__name__}")
        return encoder, (dtype if dtype is not None else encoder.dtype_policy)

    @staticmethod
    def _encoder_inputs(shape=(None,)):
        return {
            name: keras.Input(shape=shape, dtype="int32", name=name)
            for name in ENCODER_INPUTS
        }

    @property
    def config(self):
        """The encoder's ``AlbertConfig``."""
        return self.encoder.config

    def _base_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
            **({"task_spec": self.task_spec} if self.task_spec is not None else {}),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)
