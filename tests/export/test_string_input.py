"""The builtin-only packer equals SegmentPacker for every length pair."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from albert_keras.export.string_input import pack_one
from albert_keras.text.packer import SegmentPacker


@pytest.mark.parametrize("truncate", ["longest_first", "waterfall"])
def test_pack_one_matches_albert_packer(truncate):
    S = 11
    packer = SegmentPacker(S, truncate=truncate)
    for la, lb in itertools.product(range(0, 14), range(-1, 14)):
        a = np.arange(10, 10 + la, dtype=np.int32)
        b = None if lb < 0 else np.arange(100, 100 + lb, dtype=np.int32)
        expected = packer(tf.ragged.constant([a.tolist()], dtype=tf.int32),
                          None if b is None else tf.ragged.constant([b.tolist()], dtype=tf.int32))
        ids, mask, segments = pack_one(tf.constant(a), None if b is None else tf.constant(b),
                                       S, truncate)
        assert ids.numpy().tolist() == expected["token_ids"].numpy().tolist(), (la, lb)
        assert mask.numpy().tolist() == expected["padding_mask"].numpy().tolist(), (la, lb)
        assert segments.numpy().tolist() == expected["segment_ids"].numpy().tolist(), (la, lb)


@pytest.mark.parametrize("truncate", ["head", "tail", "head+tail"])
def test_pack_one_matches_albert_packer_for_single_text_cuts_and_bert_ids(truncate):
    S = 11
    bert = {"pad": 7, "cls": 101, "sep": 102}
    packer = SegmentPacker(S, truncate=truncate, special_ids=bert)
    for la in range(0, 20):
        a = np.arange(10, 10 + la, dtype=np.int32)
        expected = packer(tf.ragged.constant([a.tolist()], dtype=tf.int32))
        ids, mask, segments = pack_one(tf.constant(a), None, S, truncate, special_ids=bert)
        assert ids.numpy().tolist() == expected["token_ids"].numpy().tolist(), la
        assert mask.numpy().tolist() == expected["padding_mask"].numpy().tolist(), la
        assert ids.numpy()[0, 0] == 101 and 102 in ids.numpy()[0]
