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


def build_double_array(keys, values):  # noqa: C901,PLR0915 (to split into named steps: issue 59)
    """A darts-clone unit array mapping each byte string to its value.

    Args:
        keys: distinct non-empty byte strings, none a prefix of another and
            none holding a zero byte (UTF-8 codepoints are such keys).
        values: ints below 2**31, one per key.

    Returns:
        A ``uint32`` numpy array.
    """
    # -- the trie: children by label, values at the leaves ---------------------------
    trie = [{}]
    leaf_value = {}
    for key, value in zip(keys, values):
        node = 0
        for byte in key:
            child = trie[node].get(byte)
            if child is None:
                child = len(trie)
                trie.append({})
                trie[node][byte] = child
            node = child
        if trie[node]:
            raise ValueError("a key is a prefix of another")
        leaf_value[node] = value

    # -- placement: breadth first, each node's children at base ^ label --------------
    # A base serves one node only: a second node with the same base would
    # reach the first one's children through its own missing labels.
    arrays = {"units": np.zeros(1 << 16, np.uint32), "taken": np.zeros(1 << 16, bool),
              "based": np.zeros(1 << 16, bool)}  # taken: a unit in use; based: a base in use

    def room(last):
        """Grows the arrays until index ``last`` exists; returns them."""
        while len(arrays["units"]) <= last:
            if len(arrays["units"]) * 2 > _MAX_UNITS:
                raise ValueError("the normalizer table needs more than 2**21 units")
            for name, array in arrays.items():
                arrays[name] = np.concatenate([array, np.zeros_like(array)])
        return arrays["units"], arrays["taken"], arrays["based"]

    units, taken, based = room(0)
    taken[0] = True
    position = {0: 0}
    queue = [0]
    leaf_cursor = 0  # below it, every slot is taken or a base: leaves only look ahead
    inner_cursor = 0
    resume = {}
    for node in queue:
        labels = sorted(trie[node])
        if not labels:  # a leaf: its value unit is its only child
            units, taken, based = room(leaf_cursor + 256)
            while taken[leaf_cursor] or based[leaf_cursor]:
                leaf_cursor += 1
                units, taken, based = room(leaf_cursor + 256)
            base = leaf_cursor
        else:
            wanted = np.asarray(labels + ([0] if node in leaf_value else []), np.int64)
            units, taken, based = room(inner_cursor + 256)
            while taken[inner_cursor]:
                inner_cursor += 1
                units, taken, based = room(inner_cursor + 256)
            # Slots are only ever taken, so a base that did not fit a label set
            # never will: the search for the same set goes on where it stopped.
            pattern = tuple(wanted.tolist())
            start = max(inner_cursor & ~255, resume.get(pattern, 0))
            base = None
            while base is None:
                units, taken, based = room(start + 4096 + 256)
                candidates = np.arange(start, start + 4096, dtype=np.int64)
                slots = candidates[:, None] ^ wanted[None, :]
                fits = ~taken[slots].any(axis=1) & ~based[candidates]
                hits = np.flatnonzero(fits)
                if hits.size:
                    base = int(candidates[hits[0]])
                    resume[pattern] = base + 1
                else:
                    start += 4096
        based[base] = True
        here = position[node]
        units[here] |= np.uint32(((here ^ base) << 10) | (0x100 if node in leaf_value else 0))
        if node in leaf_value:
            taken[base] = True
            units[base] = np.uint32(leaf_value[node] | 0x80000000)
        for label in labels:
            slot = base ^ label
            taken[slot] = True
            units[slot] = np.uint32(label)
            position[trie[node][label]] = slot
            queue.append(trie[node][label])
    return units[:int(np.flatnonzero(taken).max()) + 1]


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
