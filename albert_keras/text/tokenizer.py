"""What every tokenizer kind provides, on the host and in the graph.

A kind (SentencePiece today) is one class with this interface plus one line
in ``albert_keras.text.registry``. Host-side methods make training data and
task features (they need character offsets and word starts, which an
in-graph op does not give); ``keras_layer`` gives the in-graph layer that
``tf.data``, a string-in Keras model and a string-in ``.tflite`` use. Both
sides must produce the same ids for the same text.
"""

from albert_keras.families import attribute


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

    @staticmethod
    def from_preset(source):
        """The tokenizer of anything ``--init`` takes: one of our model
        folders, an HF, TF1 or keras-hub folder, or a tokenizer file.

        Example:
        >>> Tokenizer.from_preset("bert-base-uncased/").encode(["a text"])  # doctest: +SKIP
        [[1037, 3793]]
        """
        # the model folder reads every source (and converts checkpoints), so
        # it sits above the tokenizers: named here, not imported
        return attribute("albert_keras.model_folder:tokenizer_from_preset")(source)

    @classmethod
    def can_read(cls, path):
        """True when ``path`` looks like this kind's file."""
        raise NotImplementedError

    @property
    def source(self):
        """The file it was read from (for error messages)."""
        raise NotImplementedError

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
