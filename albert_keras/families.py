"""The model families: what the rest of the package asks about a model.

A family is a config class, a backbone (an encoder with the entry in
``albert_keras.models.backbone``), its named presets and, where it has any,
its checkpoint readers and writers. Pretraining, distillation, conversion,
the model folder, export and the command line find a model's family here,
by its config, and never test for a concrete encoder class; so a new family
is its own folder plus one line in ``BUILT_IN`` (or one ``register_family``
call in the user's code).

This module imports no Keras: the command line reads the presets from it
before Keras loads. Backbones and checkpoint modules are named as
``"module:attribute"`` strings and imported when first used.

Example:
>>> tiny = family_named("albert").presets["albert_tiny"]
>>> tiny["hidden_size"]
256
>>> preset_config("bert_tiny").hidden_size
128
"""

import dataclasses
import importlib

from albert_keras.config_dicts import ConfigError

# One module per built-in family; importing it registers the family.
BUILT_IN = (
    "albert_keras.models.albert.family",
    "albert_keras.models.deberta.family",
    "albert_keras.models.mobilebert.family",
    "albert_keras.models.modernbert.family",
)

_FAMILIES = {}


@dataclasses.dataclass(frozen=True)
class Family:
    """One model family, as the registry holds it.

    Args:
        name: the family's name (``albert``, ``deberta``, ``mobilebert``).
        config_class: its config dataclass. It has ``from_dict`` and
            ``to_dict`` and the fields every caller reads: ``vocab_size``,
            ``hidden_size``, ``num_hidden_layers``, ``num_attention_heads``,
            ``max_position_embeddings`` and ``initializer_range`` (HF's names),
            and ``with_dropout(rate)`` (the config with every dropout at
            ``rate``).
            One family's class may extend another's (``DebertaConfig`` is
            ``AlbertConfig`` with DeBERTa's relative-attention fields); the
            extending class then has ``extending(config, source, **fields)``,
            so that those fields given on the other family's preset or file
            make its config (``config_from_fields``).
        backbone: ``"module:Class"`` of its encoder; the class is built as
            ``Class(config, **options)`` and has the backbone entry.
        presets: preset name -> config fields.
        hf_model_types: the ``model_type`` values of HF ``config.json``
            files that its ``checkpoints`` module reads.
        checkpoints: ``"module"`` with ``load_hf(folder, strict, dtype)`` and
            ``save_hf(model, folder, overwrite, model_type)``, or None.
        claims: ``"module:function"``: given any config, whether it is this
            family's, for a family whose configs another family's class
            can hold too; None claims every instance of ``config_class``
            (where two classes claim one, the more derived wins: a
            ``DebertaConfig`` is an ``AlbertConfig`` too).
        tf1: ``"module"`` with ``reads_tf1_config(data)`` and
            ``load_tf1(prefix, data, tensors, source, strict, dtype)`` for
            original TF1 checkpoints, or None.
        keras_hub: ``"module"`` with ``BACKBONES`` (the keras-hub backbone
            class names it reads), ``load_keras_hub_preset(folder)`` and
            ``save_keras_hub_preset(encoder, tokenizer, folder)``, or None.
        layout: ``"module:RULES"``: ``{weight path pattern: "out" | "in"}``,
            which kernels split their columns or rows over a device mesh's
            model axis under ``--strategy model_parallel``; None: the family
            cannot be split (that strategy refuses it).
        tokenizer_kind: the tokenizer kind ``pretrain`` trains for a new
            model of the family (``sentencepiece``; ModernBERT's ``bpe``).
        mask_rate: the share of tokens its authors masked in pretraining,
            which the small-corpus recipe masks when ``--mask-rate`` is not
            given (ModernBERT's 30%); None: the recipe's own (40%).
        recipe_fields: the config fields its authors' recipe sets on any
            preset's model (DeBERTa-v3's attention, which ``--recipe
            deberta_v3`` puts on an ALBERT preset), or None.
        recipes: ``--recipe`` name -> ``"module:function"`` of the
            pretraining recipes it brings (``albert_keras.training.recipes``
            says what a recipe is), or None.
        attention: ``"module:function"`` for a family whose encoder runs
            ALBERT's shared stack with its own attention (the config's
            ``relative_options()`` not None): ``function(options,
            hidden_size, common)`` gives ``(block class, the block's extra
            keywords, the layer of the table every block reads)``; ``common``
            holds the keywords every layer of the stack takes. None: the
            stack's own attention.
        unread_weights: regular expressions of weight paths (as Keras
            names them in its missing-gradient warning, quotes excluded)
            that its encoder keeps but a run may not train: a warning that
            names only these and poolers is hidden
            (``albert_keras.training.unused_weights``).

    Example:
    >>> Family("toy", dict, "my_models:ToyEncoder").hf_model_types
    ()
    """

    name: str
    config_class: type
    backbone: str
    presets: dict = dataclasses.field(default_factory=dict)
    hf_model_types: tuple = ()
    checkpoints: str = None
    claims: str = None
    tf1: str = None
    keras_hub: str = None
    layout: str = None
    tokenizer_kind: str = "sentencepiece"
    mask_rate: float = None
    recipe_fields: dict = None
    recipes: dict = None
    attention: str = None
    unread_weights: tuple = ()

    @property
    def backbone_class(self):
        """The encoder class (imported on first use)."""
        return attribute(self.backbone)

    def claims_config(self, config):
        """Whether ``config`` belongs to this family."""
        if self.claims is not None:
            return bool(attribute(self.claims)(config))
        return isinstance(config, self.config_class)

    def checkpoint_module(self):
        """The module that reads and writes this family's HF folders."""
        if self.checkpoints is None:
            raise ValueError(f"the {self.name} family has no checkpoint converter")
        return importlib.import_module(self.checkpoints)


    def tf1_module(self):
        """The module that reads this family's original TF1 checkpoints."""
        return importlib.import_module(self.tf1)

    def keras_hub_module(self):
        """The module that converts this family's keras-hub presets."""
        return importlib.import_module(self.keras_hub)


def attribute(spec):
    """The object a ``"module:attribute"`` string names, its module
    imported on first use (how the registry, and the classes whose
    ``from_preset`` reads model folders, name what sits above them).

    Example:
    >>> attribute("os.path:join")("a", "b")
    'a/b'
    """
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def register_family(family):
    """Adds ``family`` (a ``Family``) to the registry; returns it.

    A preset name or HF ``model_type`` that another family already holds is
    an error: each must mean one model.
    """
    for other in _FAMILIES.values():
        if other.name == family.name:
            continue
        for kind, mine, theirs in (("preset", family.presets, other.presets),
                                   ("HF model_type", family.hf_model_types,
                                    other.hf_model_types),
                                   ("recipe", family.recipes or {}, other.recipes or {})):
            taken = sorted(set(mine) & set(theirs))
            if taken:
                raise ValueError(f"family {family.name!r}: {kind} {taken[0]!r} belongs to "
                                 f"family {other.name!r}")
    _FAMILIES[family.name] = family
    return family


def families():
    """Every registered family, in registration order."""
    _load_built_in()
    return tuple(_FAMILIES.values())


def _load_built_in():
    for module in BUILT_IN:
        importlib.import_module(module)


def family_recipes():
    """``{--recipe name: "module:function"}`` of every family's recipes, in
    registration order.

    Example:
    >>> family_recipes()["deberta_v3"].endswith(":deberta_v3_recipe")
    True
    """
    return {name: spec for family in families() for name, spec in (family.recipes or {}).items()}


def family_named(name):
    """The family called ``name``."""
    _load_built_in()
    if name not in _FAMILIES:
        raise ValueError(f"unknown model family {name!r}; registered: {sorted(_FAMILIES)}")
    return _FAMILIES[name]


def family_of(config):
    """The family a config (or a backbone, by its ``config``) belongs to.

    The most specific family wins: one with a ``claims`` test before the
    family that takes every config of the class.
    """
    config = getattr(config, "config", config)
    candidates = [f for f in families() if f.claims_config(config)]
    if not candidates:
        raise ValueError(f"no registered model family takes a {type(config).__name__} "
                         f"config; registered: {sorted(_FAMILIES)}")
    # the most specific: a claiming function first, then the deepest class
    # (DeBERTa's config extends ALBERT's, whose family takes every instance)
    return min(candidates, key=lambda f: (f.claims is None, -len(f.config_class.__mro__)))


def config_from_fields(config_class, fields, source="config"):
    """A config of ``config_class`` (a family's) from a dict of its fields
    (a file's, or a preset's with overrides); where the dict also names
    fields that only a registered family's extending class has (DeBERTa's
    relative attention on an ALBERT preset, or in a file written before
    DeBERTa's class held those fields), that class's, through its
    ``extending(config, source, **fields)``. Errors name ``source``.

    Example:
    >>> from albert_keras.models.albert.albert_config import AlbertConfig
    >>> type(config_from_fields(AlbertConfig, {"relative_attention": True})).__name__
    'DebertaConfig'
    """
    if not hasattr(config_class, "from_dict"):  # a bare dataclass: its own checks only
        return config_class(**fields)
    own = {f.name for f in dataclasses.fields(config_class)}
    extra = {k: v for k, v in fields.items() if k not in own}
    wider = _extending_class(config_class, extra) if extra else None
    if wider is not None:
        try:  # a file of this class's that once held such fields reads as this class's
            return config_class.from_dict(fields, source)
        except ConfigError:
            base = config_class.from_dict({k: v for k, v in fields.items() if k in own}, source)
            return wider.extending(base, source, **extra)
    return config_class.from_dict(fields, source)


def _extending_class(config_class, extra):
    """A registered family's config class that extends ``config_class`` and
    has every field in ``extra``, or None."""
    for family in families():
        wider = family.config_class
        if (wider is not config_class and issubclass(wider, config_class)
                and set(extra) <= {f.name for f in dataclasses.fields(wider)}):
            return wider
    return None


def build_backbone(config, **options):
    """A new encoder of ``config``'s family (``options`` go to its class)."""
    return family_of(config).backbone_class(config, **options)


def preset_names():
    """Every preset name of every family, sorted."""
    return sorted(name for f in families() for name in f.presets)


def preset_config(name, **overrides):
    """The config of preset ``name`` (any family), with field overrides."""
    for family in families():
        if name in family.presets:
            return config_from_fields(family.config_class, {**family.presets[name], **overrides},
                                      f"preset {name}")
    raise ValueError(f"unknown preset {name!r}; choose one of {preset_names()}")


def family_for_hf(model_type, source="config.json"):
    """The family that reads HF folders of ``model_type``."""
    for family in families():
        if model_type in family.hf_model_types:
            return family
    known = sorted(t for f in families() for t in f.hf_model_types)
    raise ValueError(f"{source}: model_type {model_type!r} is not supported; "
                     f"supported: {', '.join(known)}")
