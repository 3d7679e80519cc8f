"""ALBERT's family in keras-hub preset folders (``save_to_preset``'s, as
Kaggle hosts them): ``AlbertBackbone`` and ``BertBackbone``, in and out.

keras-hub itself reads and writes preset folders, and its HF converters
(``keras_hub.src.utils.transformers.convert_albert`` / ``convert_bert``) map
every tensor between its backbones and HF's names. We go through HF's names,
which our own converter reads and writes, so that no mapping is written twice:

* out: our encoder -> an HF folder (``save_hf``) -> keras-hub's own
  ``from_preset`` -> ``save_to_preset``, with the tokenizer;
* in: keras-hub's ``from_preset`` -> HF tensors, by running keras-hub's
  converter backwards (each of its reshapes and transposes is undone on an
  index array of the HF shape) -> our encoder (``load_hf``).

Only ALBERT models with ``sharing="all"`` and no ALiBi, and BERT models with
the tanh GELU that keras-hub's ``BertBackbone`` computes, have a keras-hub
form with the same outputs; others are refused in one line. Finding a
preset, reading its tokenizer and reaching keras-hub are
``albert_keras.convert.keras_hub_preset``'s.
"""

import importlib
import json
import os
import tempfile

import numpy as np

from albert_keras.convert.conversion_error import ConversionError
from albert_keras.convert.hf import load_hf
from albert_keras.convert.hf import read_hf_tensors
from albert_keras.convert.hf import save_hf
from albert_keras.convert.keras_hub_preset import TOKENIZERS
from albert_keras.convert.keras_hub_preset import from_preset
from albert_keras.convert.keras_hub_preset import keras_hub
from albert_keras.convert.keras_hub_preset import preset_backbone
from albert_keras.convert.keras_hub_preset import preset_tokenizer
from albert_keras.models.albert.albert_config import AlbertConfig
from albert_keras.models.albert.albert_encoder import AlbertEncoder
from albert_keras.models.pretrainers.encoder_pretrainer import EncoderPretrainer

# keras-hub backbone class -> (our HF model type, keras-hub's HF converter)
BACKBONES = {
    "AlbertBackbone": ("albert", "convert_albert"),
    "BertBackbone": ("bert", "convert_bert"),
}


def _hf_tensors_of(backbone, model_type, template):
    """HF's tensors of a keras-hub ``backbone``: keras-hub's converter run
    backwards. ``template`` gives each HF tensor's shape."""
    converter = importlib.import_module(
        f"keras_hub.src.utils.transformers.{BACKBONES[type(backbone).__name__][1]}")
    tensors = {}

    class Backwards:
        """Stands in for keras-hub's safetensors loader: each port becomes a pull."""

        def port_weight(self, keras_variable, hf_weight_key, hook_fn=None):
            key = hf_weight_key.split(".", 1)[1] if hf_weight_key.startswith(
                f"{model_type}.") else hf_weight_key
            value = np.asarray(keras_variable.numpy(), np.float32)
            if hook_fn is None:
                tensors[key] = value
                return
            shape = template[key].shape
            # the hook only moves numbers: apply it to their positions and invert
            positions = np.asarray(hook_fn(np.arange(int(np.prod(shape))).reshape(shape),
                                           list(value.shape)))
            flat = np.empty(int(np.prod(shape)), np.float32)
            flat[positions.ravel()] = value.ravel()
            tensors[key] = flat.reshape(shape)

        def get_tensor(self, key):  # tokenizers and a few converters read directly
            raise ConversionError(f"keras-hub reads {key} directly; not convertible")

    converter.convert_weights(backbone, Backwards(), {})
    return tensors


def load_keras_hub_preset(folder):
    """``(our encoder, our tokenizer)`` from a keras-hub preset folder.

    Example:
    >>> encoder, tokenizer = load_keras_hub_preset("albert_base_en_uncased/")  # doctest: +SKIP
    """
    name = preset_backbone(folder)
    model_type = BACKBONES[name][0]
    backbone = from_preset(getattr(keras_hub().models, name), folder)
    ours = _encoder_for(backbone, model_type)
    with tempfile.TemporaryDirectory() as work:
        template_folder = os.path.join(work, "template")
        save_hf(ours, template_folder, model_type=model_type)
        template = read_hf_tensors(template_folder)
        template = {k.split(".", 1)[1] if k.startswith(f"{model_type}.") else k: v
                    for k, v in template.items()}
        tensors = _hf_tensors_of(backbone, model_type, template)
        hf_folder = os.path.join(work, "hf")
        _write_hf(hf_folder, template_folder, tensors)
        model, _ = load_hf(hf_folder)
    encoder = getattr(model, "encoder", model)
    return encoder, preset_tokenizer(folder)


def _encoder_for(backbone, model_type):
    """A fresh encoder of ours with the backbone's architecture."""
    c = backbone.get_config()
    fields = {
        "vocab_size": c["vocabulary_size"], "hidden_size": c["hidden_dim"],
        "num_hidden_layers": c["num_layers"], "num_attention_heads": c["num_heads"],
        "intermediate_size": c["intermediate_dim"], "max_position_embeddings":
            c["max_sequence_length"], "type_vocab_size": c["num_segments"],
    }
    if model_type == "albert":
        fields.update(embedding_size=c["embedding_dim"], num_hidden_groups=c["num_groups"],
                      inner_group_num=c["num_inner_repetitions"], hidden_act="gelu_new")
    else:
        # keras-hub's BertBackbone computes the tanh GELU (HF's BERT the exact one)
        fields.update(embedding_size=c["hidden_dim"], sharing="none", hidden_act="gelu_new",
                      num_hidden_groups=c["num_layers"])
    return AlbertEncoder(AlbertConfig(**fields))


def _write_hf(folder, template_folder, tensors):
    from safetensors.numpy import save_file

    os.makedirs(folder)
    with open(os.path.join(template_folder, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f)
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()},
              os.path.join(folder, "model.safetensors"))


def save_keras_hub_preset(encoder, tokenizer, folder):
    """Writes ``encoder`` and ``tokenizer`` as a keras-hub preset folder that
    ``AlbertBackbone.from_preset`` (or ``BertBackbone``) and the matching
    ``TextClassifier.from_preset`` load.

    Example:
    >>> save_keras_hub_preset(encoder, tokenizer, "albert_preset/")  # doctest: +SKIP
    """
    c = encoder.config
    if c.position_bias != "none":
        raise ConversionError(f"position_bias={c.position_bias!r}: keras-hub's backbones have "
                              "no ALiBi; keep this model as .keras")
    bert = c.sharing == "none" and c.embedding_size == c.hidden_size
    if not bert and c.sharing != "all":
        raise ConversionError(f"sharing={c.sharing!r}: keras-hub's AlbertBackbone shares "
                              "all of a group; only sharing 'all' (ALBERT) or 'none' with "
                              "E = H (BERT) convert")
    if bert and c.hidden_act != "gelu_new":
        raise ConversionError(f"hidden_act={c.hidden_act!r}: keras-hub's BertBackbone computes "
                              "the tanh GELU (gelu_new), so this BERT's outputs would differ "
                              "there by about 1e-3")
    name = "BertBackbone" if bert else "AlbertBackbone"
    with tempfile.TemporaryDirectory() as work:
        hf_folder = os.path.join(work, "hf")
        # keras-hub's converters read ALBERT's tensors under "albert." (a
        # pretraining folder) and BERT's without a prefix (a BertModel folder)
        if bert:
            save_hf(encoder, hf_folder, model_type="bert")
        else:
            save_hf(EncoderPretrainer(encoder), hf_folder, model_type="albert")
        backbone = getattr(keras_hub().models, name).from_preset(hf_folder)
        backbone.save_to_preset(folder)
    _save_tokenizer(tokenizer, name, folder)
    return folder


def _save_tokenizer(tokenizer, backbone_name, folder):
    wanted = TOKENIZERS[backbone_name]
    if tokenizer.keras_hub_tokenizer != wanted:
        raise ConversionError(f"keras-hub's {wanted} is not this model's {tokenizer.kind} "
                              "tokenizer")
    try:
        hub_tokenizer = tokenizer.to_keras_hub(getattr(keras_hub().tokenizers, wanted))
    except ValueError as e:
        raise ConversionError(str(e)) from None
    hub_tokenizer.save_to_preset(folder)
