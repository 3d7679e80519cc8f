"""Extractive QA: sliding windows over long contexts and span decoding.

Phases: each question and its context are cut into windows that fit the
sequence (``[CLS] question [SEP] context window [SEP]``, windows ``stride``
pieces apart) -> the model scores start and end of every token -> the best
``start <= end`` spans over all windows are mapped back to the exact
characters of the original context. SQuAD v2: an unanswerable question
points at ``[CLS]``; at prediction time the answer is empty when the
``[CLS]`` score beats the best span by more than ``null_threshold``.
"""

import dataclasses

import numpy as np


@dataclasses.dataclass
class QAFeatures:
    inputs: dict  # encoder inputs [N, S]
    start_positions: np.ndarray  # [N] (0 = [CLS]: no answer in this window)
    end_positions: np.ndarray
    example_index: np.ndarray  # [N] which question each window belongs to
    offsets: list  # per window: {position: (char_start, char_end)} for context pieces
    max_context: list  # per window: {position: bool}


def qa_features(tokenizer, examples, sequence_length=384, stride=128, max_question_length=64):
    """Windows for every question.

    Args:
        tokenizer: a host-side ``Tokenizer``.
        examples: ``QAExample`` list (answers used for training labels).
        sequence_length: S.
        stride: pieces between the starts of two windows.
        max_question_length: the question is cut to this many pieces.
    """
    rows = []
    for e_index, example in enumerate(examples):
        q_ids = tokenizer.encode([example.question])[0][:max_question_length]
        c_ids, c_starts, c_ends = tokenizer.encode_with_offsets(example.context)
        room = sequence_length - len(q_ids) - 3
        if room < 1:
            raise ValueError(
                f"question {example.qid}: sequence_length {sequence_length} leaves no room "
                f"for the context after a {len(q_ids)}-piece question"
            )
        # The answer's first and last piece (from the first listed answer).
        answer = None
        if example.answers:
            text, char_start = example.answers[0]
            char_end = char_start + len(text)
            first = next(i for i, e in enumerate(c_ends) if e > char_start)
            last = max(i for i, s in enumerate(c_starts) if s < char_end)
            answer = (first, last)

        windows = []
        start = 0
        while True:
            length = min(room, len(c_ids) - start)
            windows.append((start, length))
            if start + length >= len(c_ids):
                break
            start += min(length, stride)
        for w_start, w_length in windows:
            offset = len(q_ids) + 2  # [CLS] question [SEP]
            cls, sep = tokenizer.special_ids["cls"], tokenizer.special_ids["sep"]
            ids = [cls] + q_ids + [sep] + c_ids[w_start:w_start + w_length] + [sep]
            positions = {}
            max_context = {}
            for j in range(w_length):
                piece = w_start + j
                positions[offset + j] = (c_starts[piece], c_ends[piece])
                max_context[offset + j] = _is_max_context(windows, (w_start, w_length), piece)
            s_pos = e_pos = 0
            if answer and w_start <= answer[0] and answer[1] < w_start + w_length:
                s_pos = offset + answer[0] - w_start
                e_pos = offset + answer[1] - w_start
            rows.append((ids, len(q_ids) + 2, s_pos, e_pos, e_index, positions, max_context))

    n = len(rows)
    token_ids = np.zeros((n, sequence_length), np.int32)
    segment_ids = np.zeros((n, sequence_length), np.int32)
    mask = np.zeros((n, sequence_length), np.int32)
    for r, (ids, first_b, *_rest) in enumerate(rows):
        token_ids[r, :len(ids)] = ids
        segment_ids[r, first_b:len(ids)] = 1
        mask[r, :len(ids)] = 1
    return QAFeatures(
        inputs={"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": mask},
        start_positions=np.array([r[2] for r in rows], np.int32),
        end_positions=np.array([r[3] for r in rows], np.int32),
        example_index=np.array([r[4] for r in rows], np.int32),
        offsets=[r[5] for r in rows],
        max_context=[r[6] for r in rows],
    )


def _is_max_context(windows, current, piece):
    """True when ``current`` is the window that gives ``piece`` the most
    context on its shorter side (the original's ``_check_is_max_context``),
    so a span is scored in one window only."""
    best, best_score = None, None
    for w_start, w_length in windows:
        if not w_start <= piece < w_start + w_length:
            continue
        left, right = piece - w_start, w_start + w_length - 1 - piece
        score = min(left, right) + 0.01 * w_length
        if best_score is None or score > best_score:
            best, best_score = (w_start, w_length), score
    return best == current


def decode_answers(features, start_logits, end_logits, examples, n_best=20,
                   max_answer_length=30, null_threshold=0.0, allow_no_answer=False):
    """Best answer per question.

    Returns:
        ``{qid: {"text", "start", "end", "score", "null_score", "n_best"}}``
        where ``context[start:end] == text`` (character offsets), ``text``
        is "" for no answer (only with ``allow_no_answer``), and ``n_best``
        lists the top spans with their probabilities.
    """
    by_example = {}
    for r, e_index in enumerate(features.example_index):
        by_example.setdefault(int(e_index), []).append(r)
    results = {}
    for e_index, rows in by_example.items():
        example = examples[e_index]
        candidates = {}
        null_score = None
        for r in rows:
            s_logits, e_logits = start_logits[r], end_logits[r]
            score_null = float(s_logits[0] + e_logits[0])
            null_score = score_null if null_score is None else min(null_score, score_null)
            offsets = features.offsets[r]
            starts = [int(i) for i in np.argsort(s_logits)[::-1][:n_best] if int(i) in offsets]
            ends = [int(i) for i in np.argsort(e_logits)[::-1][:n_best] if int(i) in offsets]
            for s in starts:
                if not features.max_context[r][s]:
                    continue
                for e in ends:
                    if e < s or e - s + 1 > max_answer_length:
                        continue
                    span = (offsets[s][0], offsets[e][1])
                    score = float(s_logits[s] + e_logits[e])
                    if span not in candidates or candidates[span] < score:
                        candidates[span] = score
        ranked = sorted(candidates.items(), key=lambda kv: -kv[1])[:n_best]
        if ranked:
            scores = np.array([s for _, s in ranked])
            probs = np.exp(scores - scores.max())
            probs /= probs.sum()
        n_best_list = [
            {"text": example.context[a:b], "start": a, "end": b, "score": s, "probability": float(p)}
            for ((a, b), s), p in zip(ranked, probs if ranked else [])
        ]
        best = n_best_list[0] if n_best_list else None
        no_answer = best is None or (
            allow_no_answer and null_score - best["score"] > null_threshold
        )
        if no_answer:
            answer = {"text": "", "start": 0, "end": 0, "score": null_score}
        else:
            answer = {k: best[k] for k in ("text", "start", "end", "score")}
        answer["null_score"] = null_score
        answer["n_best"] = n_best_list
        results[example.qid] = answer
    return results
