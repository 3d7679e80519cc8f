"""What every tokenizer kind provides, on the host and in the graph.

A kind (SentencePiece today) is one class with this interface plus one line
in ``albert_keras.text.registry``. Host-side methods make training data and
task features (they need character offsets and word starts, which an
in-graph op does not give); ``keras_layer`` gives the in-graph layer that
``tf.data``, a string-in Keras model and a string-in ``.tflite`` use. Both
sides must produce the same ids for the same text.
"""

from albert_keras.sources.registry import tokenizer_from_preset


class Tokenizer:
    """A tokenizer kind, built from its file.

    Args:
        path: the tokenizer's file (or, where the kind allows, its bytes).

    Example:
    >>> tokenizer = load_tokenizer("spm.model")  # doctest: +SKIP
    >>> tokenizer.encode(["a text"])  # doctest: +SKIP
    [[35, 1207]]
    """

    # The registry name, recorded in model folders and data manifests.
    kind = None
    # The file name a model folder or data folder keeps it under.
    file_name = None
    # Whether ``keras_layer`` exists: a string-in export needs it.
    in_graph = True

    @staticmethod
    def from_preset(source):
        """The tokenizer of anything ``--init`` takes: one of our model
        folders, an HF, TF1 or keras-hub folder, or a tokenizer file.

        Example:
        >>> Tokenizer.from_preset("bert-base-uncased/").encode(["a text"])  # doctest: +SKIP
        [[1037, 3793]]
        """
        # the source registry names its readers, which read tokenizers and
        # so sit above this module
        return tokenizer_from_preset(source)

    @classmethod
    def train(cls, sentences, out_path, config, overwrite=False):
        """Trains a tokenizer of this kind on ``sentences`` (an iterable of
        strings) with a ``TokenizerConfig``; writes ``out_path``, returns it."""
        raise ValueError(f"no trainer for {cls.kind} tokenizers here")

    @classmethod
    def can_read(cls, path):
        """True when ``path`` looks like this kind's file."""
        raise NotImplementedError

    @property
    def source(self):
        """The file it was read from (for error messages; each kind sets
        ``_source`` when it reads its file)."""
        return self._source

    def check(self):
        """Refuses files the in-graph layer would get wrong; returns self."""
        return self

    @property
    def vocabulary_size(self):
        raise NotImplementedError

    @property
    def special_ids(self):
        """``{"pad", "unk", "cls", "sep", "mask"}`` -> id."""
        raise NotImplementedError

    def word_starts(self):
        """A bool array over the vocabulary: does the piece begin a word?"""
        raise NotImplementedError

    def encode(self, texts):
        """A list of id lists, one per text."""
        raise NotImplementedError

    def encode_with_offsets(self, text):
        """``(ids, char_starts, char_ends)`` for one text."""
        raise NotImplementedError

    def id_to_piece(self, index):
        raise NotImplementedError

    def decode(self, ids):
        """The text of a list of ids (word markers turned back into spaces)."""
        raise NotImplementedError

    def keras_layer(self):
        """The in-graph tokenizer: strings in, ragged ids out."""
        raise NotImplementedError

    def save(self, folder):
        """Copies the tokenizer's file into ``folder``; returns its name there."""
        raise NotImplementedError

    # -- what export, the web page, app metadata, HF and keras-hub folders ask
    # of a kind (declared here, so none of them branches on the kind)

    # The app runtimes' form of this kind in a ``.tflite``'s metadata (the
    # schema's ``ProcessUnitOptions`` name that MediaPipe and the Task
    # Library read: ``"SentencePieceTokenizerOptions"`` or
    # ``"BertTokenizerOptions"``), or None: no app runtime reads it.
    app_tokenizer = None
    # Where that runtime's tokenizer cuts text otherwise than this kind.
    app_difference = ""
    # keras-hub's tokenizer class of this kind, or None.
    keras_hub_tokenizer = None

    def app_files(self):
        """``{file name: bytes}``: the tokenizer as the app runtimes read it."""
        raise ValueError(f"no app runtime reads a {self.kind} tokenizer")

    def text_steps(self):
        """What the kind does to a text before its pieces, as a page must do
        it first: ``{"lowercase": bool, "strip_accents": bool}``."""
        return {"lowercase": False, "strip_accents": False}

    @classmethod
    def hf_files(cls, files, record):
        """transformers' form of a tokenizer of this kind.

        Args:
            files: the kind's files by name (bytes), as a model carries them.
            record: its record (``file``, ``options``).

        Returns:
            ``({file name: bytes}, tokenizer_config)``: the vocabulary files
            and the ``tokenizer_config.json`` naming transformers' class.
        """
        raise ValueError(f"a {cls.kind} tokenizer has no HF form here")

    def to_keras_hub(self, tokenizer_class):
        """keras-hub's ``tokenizer_class`` (its ``keras_hub_tokenizer``) with
        this tokenizer's pieces and options; a ``ValueError`` where its ids
        would differ."""
        raise ValueError(f"keras-hub has no {self.kind} tokenizer")

    @classmethod
    def from_keras_hub(cls, hub_tokenizer, work):
        """Ours from keras-hub's tokenizer of this kind (files go in ``work``)."""
        raise ValueError(f"keras-hub has no {cls.kind} tokenizer")
