"""QA windows and span decoding: exact characters back, across windows."""

import numpy as np
import pytest

from albert_keras.tasks.qa.qa_features import decode_answers
from albert_keras.tasks.qa.qa_features import qa_features
from albert_keras.tasks.readers import QAExample
from albert_keras.text.sentencepiece_tokenizer import SentencePiece

CONTEXT = ("The quick brown fox jumps over a lazy dog. Le café naïve est à 東京 😀 "
           "while people watch from their windows and talk about weather, markets and "
           "congress. The nation keeps its résumé of freedom and union data.")


def _example(answer, qid="q", question="What is it?"):
    start = CONTEXT.index(answer)
    return QAExample(qid, question, CONTEXT, [(answer, start)], False)


def _perfect_logits(features, answer_span=None):
    """Logits that point at the answer's first and last piece wherever a
    window holds them (as a model that knows the answer would), or at each
    window's labelled span."""
    n, s = features.inputs["token_ids"].shape
    start = np.zeros((n, s), np.float32)
    end = np.zeros((n, s), np.float32)
    if answer_span is None:
        start[np.arange(n), features.start_positions] = 10.0
        end[np.arange(n), features.end_positions] = 10.0
        return start, end
    for r, offsets in enumerate(features.offsets):
        for position, (a, b) in offsets.items():
            start[r, position] += 10.0 * (a == answer_span[0])
            end[r, position] += 10.0 * (b == answer_span[1])
    return start, end


def test_offsets_slice_the_original_text(spm_path):
    encoder = SentencePiece(spm_path)
    ids, starts, ends = encoder.encode_with_offsets(CONTEXT)
    assert ids == encoder.encode([CONTEXT])[0]
    for piece, a, b in zip(ids, starts, ends):
        assert 0 <= a <= b <= len(CONTEXT)
        assert a < b or encoder.id_to_piece(piece) == "\u2581"  # a lone word-start mark
        assert not CONTEXT[a:b].startswith(" ")
    # Every non-space character belongs to some piece.
    covered = set()
    for a, b in zip(starts, ends):
        covered.update(range(a, b))
    assert all(i in covered for i, ch in enumerate(CONTEXT) if not ch.isspace())


@pytest.mark.parametrize("answer", ["café naïve", "東京 😀", "résumé of freedom", "quick brown fox"])
def test_answers_map_back_to_exact_characters(spm_path, answer):
    encoder = SentencePiece(spm_path)
    examples = [_example(answer)]
    features = qa_features(encoder, examples, sequence_length=24, stride=6)
    assert len(features.start_positions) > 3  # a long context in many windows
    assert (features.start_positions > 0).any()
    result = decode_answers(features, *_perfect_logits(features), examples)["q"]
    assert result["text"] == answer
    assert CONTEXT[result["start"]:result["end"]] == answer


def test_an_answer_across_a_window_edge_is_found_in_an_overlapping_window(spm_path):
    encoder = SentencePiece(spm_path)
    _, starts, _ = encoder.encode_with_offsets(CONTEXT)
    seq, stride, question = 32, 8, "What is it?"
    room = seq - len(encoder.encode([question])[0]) - 3
    # Pieces room-2 .. room+1 straddle the end of the first window.
    a = starts[room - 2]
    b = starts[room + 2]
    answer = CONTEXT[a:b].strip()
    examples = [QAExample("q", question, CONTEXT, [(answer, a)], False)]
    features = qa_features(encoder, examples, sequence_length=seq, stride=stride)
    assert features.start_positions[0] == 0  # not wholly in the first window
    assert (features.start_positions[1:] > 0).any()
    logits = _perfect_logits(features, (a, a + len(answer)))
    result = decode_answers(features, *logits, examples)["q"]
    assert result["text"] == answer


def test_version_2_null_threshold(spm_path):
    encoder = SentencePiece(spm_path)
    examples = [_example("café naïve")]
    features = qa_features(encoder, examples, sequence_length=96, stride=32)
    assert len(features.start_positions) == 1
    a = CONTEXT.index("café naïve")
    start, end = _perfect_logits(features, (a, a + len("café naïve")))
    start[:, 0], end[:, 0] = 12.0, 10.0  # [CLS] (no answer) scores 2 above the span
    loose = decode_answers(features, start, end, examples, allow_no_answer=True)["q"]
    assert loose["text"] == ""
    assert loose["null_score"] - loose["n_best"][0]["score"] == pytest.approx(2.0)
    strict = decode_answers(features, start, end, examples, allow_no_answer=True,
                            null_threshold=3.0)["q"]
    assert strict["text"] == "café naïve"
    v1 = decode_answers(features, start, end, examples, allow_no_answer=False)["q"]
    assert v1["text"] == "café naïve"


def test_max_answer_length(spm_path):
    encoder = SentencePiece(spm_path)
    examples = [_example("brown fox jumps over a lazy dog")]
    features = qa_features(encoder, examples, sequence_length=96, stride=48)
    logits = _perfect_logits(features)
    assert decode_answers(features, *logits, examples, max_answer_length=3)["q"]["text"] != \
        "brown fox jumps over a lazy dog"
