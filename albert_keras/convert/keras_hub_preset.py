"""keras-hub preset folders (``save_to_preset``'s, as Kaggle hosts them) in and out.

A preset folder holds ``config.json`` (the backbone's Keras config),
``model.weights.h5`` and the tokenizer's ``tokenizer.json`` and assets.
keras-hub itself reads and writes them, and its HF converters
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
form with the same outputs; others are refused in one line. keras-hub is an optional
dependency (``pip install 'albert-keras[keras-hub]'``).
"""

import importlib
import json
import os
import tempfile

import numpy as np

from albert_keras.convert.assign import ConversionError
from albert_keras.families import family_of

# keras-hub backbone class -> (our model type, keras-hub's HF converter, its tokenizer)
_BACKBONES = {
    "AlbertBackbone": ("albert", "convert_albert", "AlbertTokenizer"),
    "BertBackbone": ("bert", "convert_bert", "BertTokenizer"),
}


def _keras_hub():
    try:
        return importlib.import_module("keras_hub")
    except ImportError:
        raise ConversionError("keras-hub preset folders need keras-hub: pip install "
                              "'albert-keras[keras-hub]'") from None


def _from_preset(cls, folder):
    """``cls.from_preset(folder)``; a preset keras-hub cannot read is the
    user's folder, named in one line (``ConversionError``)."""
    try:
        return cls.from_preset(folder)
    except (ValueError, TypeError, KeyError, OSError) as e:
        first = " ".join(str(e).split(". ")[0].split())
        raise ConversionError(f"{os.path.join(folder, 'config.json')}: keras-hub cannot read "
                              f"this preset ({type(e).__name__}: {first[:200]})") from None


def preset_backbone(folder):
    """The keras-hub backbone class name of a preset folder, or None."""
    path = os.path.join(folder, "config.json")
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as e:
        if os.path.isfile(os.path.join(folder, "metadata.json")):
            # save_to_preset writes metadata.json beside it: a broken preset,
            # named as such rather than taken for another format
            raise ConversionError(f"{path}: not valid JSON ({' '.join(str(e).split())})") \
                from None
        return None
    if not isinstance(config, dict) or not str(config.get("module", "")).startswith(
            "keras_hub"):
        return None
    return config.get("class_name")


def is_keras_hub_preset(path):
    """True for a folder ``save_to_preset`` wrote (a ``keras_hub`` backbone config)."""
    return os.path.isdir(path) and preset_backbone(path) is not None


def _hf_tensors_of(backbone, model_type, template):
    """HF's tensors of a keras-hub ``backbone``: keras-hub's converter run
    backwards. ``template`` gives each HF tensor's shape."""
    converter = importlib.import_module(
        f"keras_hub.src.utils.transformers.{_BACKBONES[type(backbone).__name__][1]}")
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
    from albert_keras.convert.hf import load_hf
    from albert_keras.convert.hf import save_hf

    keras_hub = _keras_hub()
    name = preset_backbone(folder)
    if name is None:
        raise ConversionError(f"{os.path.join(folder, 'config.json')}: not a keras-hub "
                              "backbone config (no keras_hub module and class_name)")
    if name not in _BACKBONES:
        raise ConversionError(f"{folder}: a keras-hub {name} preset; only AlbertBackbone and "
                              "BertBackbone convert")
    model_type = _BACKBONES[name][0]
    backbone = _from_preset(getattr(keras_hub.models, name), folder)
    ours = _encoder_for(backbone, model_type)
    with tempfile.TemporaryDirectory() as work:
        template_folder = os.path.join(work, "template")
        save_hf(ours, template_folder, model_type=model_type)
        from albert_keras.convert.hf import read_hf_tensors

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
    from albert_keras.config import AlbertConfig
    from albert_keras.models.albert.albert_encoder import AlbertEncoder

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


def preset_tokenizer(folder):
    """Our tokenizer from a preset's (its SentencePiece model or vocabulary)."""
    from albert_keras.text.registry import load_tokenizer

    keras_hub, backbone_name = _keras_hub(), preset_backbone(folder)
    if backbone_name not in _BACKBONES:
        raise ConversionError(f"{folder}: a keras-hub {backbone_name} preset; only "
                              "AlbertBackbone and BertBackbone convert")
    tokenizer = _from_preset(getattr(keras_hub.tokenizers, _BACKBONES[backbone_name][2]), folder)
    with tempfile.TemporaryDirectory() as work:
        if backbone_name == "AlbertBackbone":
            path = os.path.join(work, "spm.model")
            with open(path, "wb") as f:
                f.write(bytes(tokenizer.proto))
            return load_tokenizer(path, "sentencepiece", {"lowercase": False,
                                                           "keep_accents": True})
        path = os.path.join(work, "vocab.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(p + "\n" for p in tokenizer.get_vocabulary()))
        return load_tokenizer(path, "wordpiece", {"lowercase": bool(tokenizer.lowercase),
                                                  "strip_accents": bool(tokenizer.strip_accents)})


def save_keras_hub_preset(encoder, tokenizer, folder):
    """Writes ``encoder`` and ``tokenizer`` as a keras-hub preset folder that
    ``AlbertBackbone.from_preset`` (or ``BertBackbone``) and the matching
    ``TextClassifier.from_preset`` load.

    Example:
    >>> save_keras_hub_preset(encoder, tokenizer, "albert_preset/")  # doctest: +SKIP
    """
    from albert_keras.convert.hf import save_hf

    family = family_of(encoder.config).name
    if family != "albert":
        raise ConversionError(f"a {family} model has no keras-hub preset form here (only "
                              "ALBERT and BERT layouts convert to keras-hub's AlbertBackbone "
                              "and BertBackbone); write --to hf or keep it as .keras")
    keras_hub = _keras_hub()
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
            from albert_keras.models.albert_pretrainer import AlbertPretrainer

            save_hf(AlbertPretrainer(encoder), hf_folder, model_type="albert")
        backbone = getattr(keras_hub.models, name).from_preset(hf_folder)
        backbone.save_to_preset(folder)
    _save_tokenizer(keras_hub, tokenizer, name, folder)
    return folder


def _save_tokenizer(keras_hub, tokenizer, backbone_name, folder):
    cls = getattr(keras_hub.tokenizers, _BACKBONES[backbone_name][2])
    if backbone_name == "AlbertBackbone":
        if tokenizer.kind != "sentencepiece":
            raise ConversionError("keras-hub's AlbertTokenizer is SentencePiece; this model's "
                                  f"tokenizer is {tokenizer.kind}")
        options = getattr(tokenizer, "options", {}) or {}
        if options.get("lowercase") or options.get("keep_accents") is False:
            raise ConversionError("this tokenizer lower-cases or strips accents before its "
                                  "SentencePiece model, which keras-hub's AlbertTokenizer "
                                  "does not do: its ids would differ")
        hub_tokenizer = cls(proto=bytes(tokenizer.proto_bytes))
    else:
        if tokenizer.kind != "wordpiece":
            raise ConversionError("keras-hub's BertTokenizer is WordPiece; this model's "
                                  f"tokenizer is {tokenizer.kind}")
        options = tokenizer.options
        # HF's rule: accents are stripped with lower-casing unless told otherwise
        strip = options["lowercase"] if options.get("strip_accents") is None else \
            options["strip_accents"]
        hub_tokenizer = cls(vocabulary=list(tokenizer.pieces),
                            lowercase=bool(options["lowercase"]), strip_accents=bool(strip))
    hub_tokenizer.save_to_preset(folder)
