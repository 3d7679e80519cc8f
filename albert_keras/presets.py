"""Named architectures, and their parameter counts."""

from albert_keras.families import families
from albert_keras.families import preset_config

# Every registered family's presets (ALBERT's and BERT's in
# ``albert_keras.models.albert.family``, DeBERTa-v3's in
# ``albert_keras.models.deberta.family``): name -> config fields. A family
# registered later is found by ``get_preset`` too.
PRESETS = {name: fields for family in families() for name, fields in family.presets.items()}


def get_preset(name, **overrides):
    """Returns the config of a preset (of any family), with field overrides.

    Args:
        name: a preset name (``albert-keras presets`` lists them).
        **overrides: config fields to change, e.g. ``vocab_size=8000``.

    Example:
    >>> get_preset("albert_base").hidden_size
    768
    """
    return preset_config(name, **overrides)


def count_parameters(config, with_pooler=True):
    """Parameters of the encoder, by formula (no model is built).

    Counts embeddings, the E -> H projection, the distinct attention and
    FFN modules (after sharing), DeBERTa's relative table and position
    projections and, by default, the pooler; the MLM/SOP heads are not
    included (keras-hub's convention).

    Example:
    >>> count_parameters(get_preset("albert_base"))
    11683584
    """
    if hasattr(config, "count_parameters"):  # a family with its own formula (MobileBERT)
        return config.count_parameters(with_pooler)
    c = config
    h, e, i = c.hidden_size, c.embedding_size, c.intermediate_size
    embeddings = (c.vocab_size + c.type_vocab_size + c.max_position_embeddings) * e
    embeddings += 2 * e  # LayerNorm
    projection = (e * h + h) if c.has_embedding_projection else 0
    attention = 4 * (h * h + h) + 2 * h
    relative = 0
    options = c.relative_options()
    if options is not None:  # DeBERTa's table, and its projections
        relative = 2 * options["span"] * h
        relative += 2 * h if options["norm_rel_ebd"] == "layer_norm" else 0
        if not options["share_att_key"]:  # a pos_key / pos_query projection per term
            attention += len(options["pos_att_type"].split("|")) * (h * h + h)
    ffn = (h * i + i) + (i * h + h) + 2 * h
    pooler = (h * h + h) if with_pooler else 0
    return (
        embeddings
        + projection
        + relative
        + c.num_attention_modules() * attention
        + c.num_ffn_modules() * ffn
        + pooler
    )
