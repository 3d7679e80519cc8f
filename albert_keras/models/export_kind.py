"""What a kind of model is to the exports: its inputs, outputs and runtimes.

A model class declares its kind once (``export_kind = ExportKind(...)``);
the TFLite, web, app-runtime and ONNX exports, their validation and model
card read the declaration and never branch on a kind's name, so a new task
model is exported by declaring what it is. Subclasses inherit the kind.
"""

import dataclasses
import types


@dataclasses.dataclass(frozen=True)
class ExportKind:
    """A model kind's export declaration.

    Args:
        name: the kind's name (the sidecar's ``kind``, messages).
        outputs: the model's output names that a served file returns.
        measures: how the export's validation judges an output, by name:
            ``classes`` (one row of class scores per example),
            ``probabilities``, ``token_classes`` (a row per real token),
            ``span`` (QA's start or end over the sequence) or ``binary``
            (a logit per token); an output not named is compared as
            vectors.
        one_text: the input is one packed text (or pair) per example, so
            a shorter input length holds a short text (``--lengths``, the
            page's lengths) and the text can be tokenized in the graph
            (``--with-tokenizer``).
        per_choice: the input holds the choices of one question,
            ``[1, choices, S]``.
        masked_positions: the input adds the positions to predict,
            ``masked_positions [1, P]`` (a masked language model).
        web: the web page runs it.
        app_task: which app-runtime task runs it with ``--metadata``:
            MediaPipe Tasks' ``text_classifier`` or ``text_embedder``, or the
            Task Library's ``bert_question_answerer``; None: none does.
        app_pairs: the app runtime takes text pairs (a question and its
            context).
        probabilities: with ``--metadata`` the file returns the softmax of
            ``logits`` as ``probability`` (app runtimes show scores as given).
        named_labels: the model's labels name its output classes (the
            metadata, the description).
        pipeline_tag: the Hugging Face pipeline tag of its model cards.
        summary: what the model does, for app metadata.
        hf_outputs: our outputs by the names transformers' class of this
            kind gives them (``--onnx``); None: no ONNX form here.

    Example:
    >>> kind = ExportKind("tagger", outputs=("logits",),
    ...                   measures={"logits": "token_classes"},
    ...                   pipeline_tag="token-classification")
    >>> kind.measure("logits"), kind.measure("other")
    ('token_classes', 'vectors')
    """

    name: str
    outputs: tuple
    measures: dict = dataclasses.field(default_factory=dict)
    one_text: bool = True
    per_choice: bool = False
    masked_positions: bool = False
    web: bool = False
    app_task: str = None
    app_pairs: bool = False
    probabilities: bool = False
    named_labels: bool = False
    pipeline_tag: str = "feature-extraction"
    summary: str = None
    hf_outputs: dict = None

    def __post_init__(self):
        # read-only tables: a kind is shared by every model of its class
        object.__setattr__(self, "measures", types.MappingProxyType(dict(self.measures)))
        if self.hf_outputs is not None:
            object.__setattr__(self, "hf_outputs",
                               types.MappingProxyType(dict(self.hf_outputs)))

    def __str__(self):
        return self.name

    def __hash__(self):
        return hash(self.name)

    def measure(self, output):
        """How the validation judges ``output`` (``vectors`` when not named)."""
        return self.measures.get(output, "vectors")

    def article(self):
        """``a`` or ``an``, for messages about a model of this kind."""
        return "an" if self.name[0] in "aeiou" else "a"
