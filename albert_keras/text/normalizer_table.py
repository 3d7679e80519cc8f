"""HF's BERT normalization as a table for tf-text's ``FastBertNormalizer``.

tf-text's in-graph BERT normalizer (the only one with a TFLite kernel) is a
per-codepoint table: a darts-clone trie from each changed codepoint's UTF-8
bytes to an entry in a string pool. Its own table folds case with ICU's
NFKC_Casefold and turns control characters into spaces, so "…" became "...",
"ß" became "ss" and "here\\x00now" two words, where HF's ``BertNormalizer``
(lower-case, NFD, drop nonspacing marks; drop control, format and private-use
characters) gives "…", "ß" and "herenow". The op accepts any table, so we
build one from HF's normalizer itself, one codepoint at a time: BERT's
normalization works codepoint by codepoint, so the table gives the same
text for whole strings (the tests check every codepoint and mixed texts).

The trie builder is written here because no library on PyPI builds
darts-clone arrays without a C++ compiler (``dartsclone`` ships source only).
The layout it writes is the one tf-text's reader expects: a node's unit holds
its label (bits 0-7), a has-value bit (8) and the XOR offset to its children
(bits 10-30); a value unit holds the value with bit 31 set.
"""

import functools

import numpy as np

# The data layout of tf-text's fast_bert_normalizer.h.
_DIFFERENT = 0x40000000
_LENGTH_BITS = 6
_MAX_LENGTH = (1 << _LENGTH_BITS) - 1
_MAX_OFFSET = (1 << (32 - 2 - _LENGTH_BITS)) - 1
# Offsets are stored directly (21 bits) while the array stays below 2**21 units.
_MAX_UNITS = 1 << 21


def _bert_normalizer(lowercase, strip_accents):
    from tokenizers import normalizers

    # Chinese characters are split by the word-piece op's own pre-tokenizer.
    return normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=False, strip_accents=strip_accents,
        lowercase=lowercase,
    )


def albert_normalizer(lowercase, keep_accents):
    """HF ``AlbertTokenizer``'s per-character steps before SentencePiece's own
    normalization: NFKD and accent stripping (unless ``keep_accents``), then
    lower-casing. None when there is nothing to do."""
    from tokenizers import normalizers

    steps = ([] if keep_accents else [normalizers.NFKD(), normalizers.StripAccents()]) + \
        ([normalizers.Lowercase()] if lowercase else [])
    return normalizers.Sequence(steps) if steps else None


@functools.lru_cache(maxsize=8)
def changed_codepoints(kind, first, second):
    """``{codepoint: normalized string}`` where HF's normalizer changes it.

    Args:
        kind: ``bert`` (``first``, ``second``: lowercase, strip_accents) or
            ``albert`` (lowercase, keep_accents).
    """
    normalizer = (_bert_normalizer if kind == "bert" else albert_normalizer)(first, second)
    changed = {}
    for codepoint in range(0x110000):
        if 0xD800 <= codepoint <= 0xDFFF:  # surrogates have no UTF-8 form
            continue
        char = chr(codepoint)
        normalized = normalizer.normalize_str(char)
        if normalized != char:
            changed[codepoint] = normalized
    return changed


def _encode(changed):
    """``(keys, values, pool, value_for_codepoint_zero)`` as tf-text stores them."""
    pool = bytearray()
    offsets = {}
    keys, values = [], []
    zero = 0
    for codepoint in sorted(changed):
        text = changed[codepoint].encode("utf-8")
        if len(text) > _MAX_LENGTH:
            raise ValueError(f"U+{codepoint:04X} normalizes to {len(text)} bytes; "
                             f"the table holds at most {_MAX_LENGTH}")
        data = _DIFFERENT
        if text:
            if text not in offsets:
                offsets[text] = len(pool)
                pool += text
            if offsets[text] > _MAX_OFFSET:
                raise ValueError("the normalizer's string pool is too large")
            data |= len(text) | (offsets[text] << _LENGTH_BITS)
        if codepoint == 0:
            zero = data  # the trie cannot hold an empty key
            continue
        keys.append(chr(codepoint).encode("utf-8"))
        values.append(data)
    return keys, values, bytes(pool), zero


def _trie(keys, values):
    """``(children, leaf_value)``: each node's ``{label: child}``, and the value
    of each node that ends a key (node 0 is the root)."""
    children = [{}]
    leaf_value = {}
    for key, value in zip(keys, values):
        node = 0
        for byte in key:
            child = children[node].get(byte)
            if child is None:
                child = len(children)
                children.append({})
                children[node][byte] = child
            node = child
        if children[node]:
            raise ValueError("a key is a prefix of another")
        leaf_value[node] = value
    return children, leaf_value


class _Placement:
    """The unit array being filled, and where the next free slots may be.

    A base serves one node only: a second node with the same base would reach
    the first one's children through its own missing labels. ``taken`` marks
    units in use, ``based`` bases in use.
    """

    _WINDOW = 4096  # candidate bases tried at once

    def __init__(self):
        self.arrays = {"units": np.zeros(1 << 16, np.uint32),
                       "taken": np.zeros(1 << 16, bool), "based": np.zeros(1 << 16, bool)}
        self.arrays["taken"][0] = True
        self.leaf_cursor = 0  # below it, every slot is taken or a base: leaves only look ahead
        self.inner_cursor = 0
        self.resume = {}  # a label set's next base to try

    def room(self, last):
        """Grows the arrays until index ``last`` exists."""
        while len(self.arrays["units"]) <= last:
            if len(self.arrays["units"]) * 2 > _MAX_UNITS:
                raise ValueError("the normalizer table needs more than 2**21 units")
            for name, array in self.arrays.items():
                self.arrays[name] = np.concatenate([array, np.zeros_like(array)])
        return self.arrays["units"], self.arrays["taken"], self.arrays["based"]

    def leaf_base(self):
        """The first free base for a leaf (its value unit is its only child)."""
        _, taken, based = self.room(self.leaf_cursor + 256)
        while taken[self.leaf_cursor] or based[self.leaf_cursor]:
            self.leaf_cursor += 1
            _, taken, based = self.room(self.leaf_cursor + 256)
        return self.leaf_cursor

    def inner_base(self, labels):
        """The first free base whose ``base ^ label`` slots are all free."""
        wanted = np.asarray(labels, np.int64)
        _, taken, _ = self.room(self.inner_cursor + 256)
        while taken[self.inner_cursor]:
            self.inner_cursor += 1
            _, taken, _ = self.room(self.inner_cursor + 256)
        # Slots are only ever taken, so a base that did not fit a label set
        # never will: the search for the same set goes on where it stopped.
        pattern = tuple(labels)
        start = max(self.inner_cursor & ~255, self.resume.get(pattern, 0))
        while True:
            _, taken, based = self.room(start + self._WINDOW + 256)
            candidates = np.arange(start, start + self._WINDOW, dtype=np.int64)
            slots = candidates[:, None] ^ wanted[None, :]
            hits = np.flatnonzero(~taken[slots].any(axis=1) & ~based[candidates])
            if hits.size:
                base = int(candidates[hits[0]])
                self.resume[pattern] = base + 1
                return base
            start += self._WINDOW

    def write(self, here, base, labels, value):
        """Points the unit at ``here`` to ``base`` and fills its children's
        units (and its value unit when ``value`` is not None)."""
        units, taken, based = self.room(0)
        based[base] = True
        units[here] |= np.uint32(((here ^ base) << 10) | (0x100 if value is not None else 0))
        if value is not None:
            taken[base] = True
            units[base] = np.uint32(value | 0x80000000)
        for label in labels:
            taken[base ^ label] = True
            units[base ^ label] = np.uint32(label)

    def used(self):
        """The units up to the last one in use."""
        return self.arrays["units"][:int(np.flatnonzero(self.arrays["taken"]).max()) + 1]


def build_double_array(keys, values):
    """A darts-clone unit array mapping each byte string to its value.

    Nodes are placed breadth first, each node's children at ``base ^ label``.

    Args:
        keys: distinct non-empty byte strings, none a prefix of another and
            none holding a zero byte (UTF-8 codepoints are such keys).
        values: ints below 2**31, one per key.

    Returns:
        A ``uint32`` numpy array.

    Example:
    >>> units = build_double_array([b"a", b"b"], [7, 9]).tolist()
    >>> def lookup(key):  # each unit's bits 10-30: the XOR offset to its children
    ...     node = 0
    ...     for byte in key:
    ...         node ^= (units[node] >> 10) ^ byte
    ...     return units[node ^ (units[node] >> 10)] & 0x7FFFFFFF
    >>> lookup(b"a"), lookup(b"b")
    (7, 9)
    """
    children, leaf_value = _trie(keys, values)
    placement = _Placement()
    position = {0: 0}
    queue = [0]
    for node in queue:
        labels = sorted(children[node])
        value = leaf_value.get(node)
        if labels:
            base = placement.inner_base(labels + ([0] if value is not None else []))
        else:
            base = placement.leaf_base()
        placement.write(position[node], base, labels, value)
        for label in labels:
            position[children[node][label]] = base ^ label
            queue.append(children[node][label])
    return placement.used()


def _flatbuffer(lowercase, trie, pool, zero):
    """The ``FastBertNormalizerModel`` flatbuffer (tf-text's schema, field order)."""
    import flatbuffers

    builder = flatbuffers.Builder(len(trie) * 4 + len(pool) + 1024)
    pool_vector = builder.CreateNumpyVector(np.frombuffer(pool or b" ", np.uint8))
    trie_vector = builder.CreateNumpyVector(trie.astype("<u4"))
    builder.StartObject(4)
    builder.PrependBoolSlot(0, bool(lowercase), False)
    builder.PrependUOffsetTRelativeSlot(1, trie_vector, 0)
    builder.PrependInt32Slot(2, zero, 0)
    builder.PrependUOffsetTRelativeSlot(3, pool_vector, 0)
    builder.Finish(builder.EndObject())
    return bytes(builder.Output())


@functools.lru_cache(maxsize=4)
def bert_normalizer_model(lowercase, strip_accents):
    """The ``FastBertNormalizer`` model bytes that normalize as HF's BERT does.

    Args:
        lowercase: lower-case the text.
        strip_accents: drop nonspacing marks after NFD (None: as ``lowercase``).

    Returns:
        Bytes for ``tensorflow_text.FastBertNormalizer(model_buffer=...)``.

    Example:
    >>> import tensorflow_text as tf_text  # doctest: +SKIP
    >>> normalizer = tf_text.FastBertNormalizer(
    ...     model_buffer=bert_normalizer_model(True, None))  # doctest: +SKIP
    """
    keys, values, pool, zero = _encode(changed_codepoints("bert", lowercase, strip_accents))
    return _flatbuffer(lowercase, build_double_array(keys, values), pool, zero)


@functools.lru_cache(maxsize=4)
def albert_normalizer_model(lowercase, keep_accents):
    """The ``FastBertNormalizer`` model bytes for HF ``AlbertTokenizer``'s
    lower-casing and accent stripping (see ``albert_normalizer``); it runs
    before the SentencePiece op, which applies the model's own rules."""
    keys, values, pool, zero = _encode(changed_codepoints("albert", lowercase, keep_accents))
    return _flatbuffer(lowercase, build_double_array(keys, values), pool, zero)
