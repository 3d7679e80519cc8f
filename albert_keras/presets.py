"""Named architectures, and their parameter counts."""

from albert_keras.config import AlbertConfig

# The original ALBERT sizes (paper Table 1, albert_config.json of each
# release). ``albert_tiny`` is ours, for tests and CPU runs.
PRESETS = {
    "albert_tiny": dict(
        embedding_size=128,
        hidden_size=256,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=1024,
    ),
    "albert_base": dict(
        embedding_size=128,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
    ),
    "albert_large": dict(
        embedding_size=128,
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096,
    ),
    "albert_xlarge": dict(
        embedding_size=128,
        hidden_size=2048,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=8192,
    ),
    "albert_xxlarge": dict(
        embedding_size=128,
        hidden_size=4096,
        num_hidden_layers=12,
        num_attention_heads=64,
        intermediate_size=16384,
    ),
    # BERT: no sharing, E = H, exact gelu, 0.1 dropout, HF's uncased vocab.
    "bert_base": dict(
        vocab_size=30522,
        embedding_size=768,
        hidden_size=768,
        num_hidden_layers=12,
        num_hidden_groups=12,
        num_attention_heads=12,
        intermediate_size=3072,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        sharing="none",
    ),
    "bert_tiny": dict(
        vocab_size=30522,
        embedding_size=128,
        hidden_size=128,
        num_hidden_layers=2,
        num_hidden_groups=2,
        num_attention_heads=2,
        intermediate_size=512,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        sharing="none",
    ),
}


def get_preset(name, **overrides):
    """Returns the ``AlbertConfig`` of a preset, with optional field overrides.

    Args:
        name: a key of ``PRESETS``.
        **overrides: config fields to change, e.g. ``vocab_size=8000``.

    Example:
    >>> get_preset("albert_base").hidden_size
    768
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return AlbertConfig(**{**PRESETS[name], **overrides})


def count_parameters(config, with_pooler=True):
    """Parameters of the encoder, by formula (no model is built).

    Counts embeddings, the E -> H projection, the distinct attention and
    FFN modules (after sharing) and, by default, the pooler; the MLM/SOP
    heads are not included (keras-hub's convention).

    Example:
    >>> count_parameters(get_preset("albert_base"))
    11683584
    """
    c = config
    h, e, i = c.hidden_size, c.embedding_size, c.intermediate_size
    embeddings = (c.vocab_size + c.type_vocab_size + c.max_position_embeddings) * e
    embeddings += 2 * e  # LayerNorm
    projection = (e * h + h) if c.has_embedding_projection else 0
    attention = 4 * (h * h + h) + 2 * h
    ffn = (h * i + i) + (i * h + h) + 2 * h
    pooler = (h * h + h) if with_pooler else 0
    return (
        embeddings
        + projection
        + c.num_attention_modules() * attention
        + c.num_ffn_modules() * ffn
        + pooler
    )
