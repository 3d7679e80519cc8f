"""ALBERT's family in original TF1 checkpoints: google-research/albert
(``albert_config.json``) and google-research/bert (``bert_config.json``).

Variable names are those of the original ``modeling.py`` (for instance
``bert/encoder/transformer/group_1/inner_group_0/attention_1/self/query/kernel``);
every group is read, not only group 0. Finding and reading the checkpoint
is ``albert_keras.convert.tf1``'s.
"""

from albert_keras.convert.assign import assign_tensors
from albert_keras.models.albert.albert_encoder import AlbertEncoder
from albert_keras.models.albert.config_files import read_config_file
from albert_keras.models.albert.weight_names import tf1_albert_names
from albert_keras.models.albert.weight_names import tf1_bert_names
from albert_keras.models.pretrainers.encoder_pretrainer import EncoderPretrainer


def reads_tf1_config(data):
    """Every original config that no other family claims is ALBERT's or BERT's."""
    return isinstance(data, dict)


# Another family's TF1 reader that claims a config goes first.
READS_ANY_CONFIG = True


def load_tf1(prefix, data, tensors, source, strict=True, dtype=None):  # noqa: PLR0913 (the checkpoint as read, and the loading options)
    """``(model, report)`` of an original ALBERT or BERT checkpoint
    (``tensors``, read from ``prefix``) with its config read from
    ``source`` (``data`` is its dict): an ``EncoderPretrainer`` when the
    checkpoint has the ``cls/`` heads, else an ``AlbertEncoder``."""
    del data  # read again in the original dialect, with its checks
    config = read_config_file(source, "original")
    names = (tf1_albert_names if config.sharing == "all" else tf1_bert_names)(config)
    encoder = AlbertEncoder(config, dtype=dtype)
    has_heads = any(k.startswith("cls/") for k in tensors)
    model = EncoderPretrainer(encoder, dtype=dtype) if has_heads else encoder
    report = assign_tensors(model, tensors, names, prefix, strict=strict)
    return model, report
