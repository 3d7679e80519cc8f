"""Python inputs of the task classes, as the rows a task file would hold.

``fit``, ``evaluate`` and ``predict`` take texts as a list, tuple, NumPy
array or pandas Series of strings, pairs as a tuple of two such columns (or
a list of ``(text, pair)`` tuples), and labels as ints, floats or names; a
``tf.data.Dataset`` of strings (or of ``(texts, labels)`` batches or rows)
is read to the end first. Each becomes ``TextExamples``, which the task
turns into features exactly as it does a file's rows. Bad input is one
``ValueError`` naming the argument and the row.
"""

import numpy as np

from albert_keras.tasks.readers import TextExamples


def _column(values, name):
    """``values`` as a list (a pandas Series or a NumPy array included)."""
    if values is None:
        raise ValueError(f"{name}: no texts given (None)")
    if isinstance(values, str):
        raise ValueError(f"{name}: a single string; pass a list of texts")
    if hasattr(values, "tolist"):  # NumPy arrays, pandas Series and Index
        values = values.tolist()
    try:
        return list(values)
    except TypeError:
        raise ValueError(f"{name}: expected a list of texts, got "
                         f"{type(values).__name__}") from None


def _check_texts(texts, name):
    if not texts:
        raise ValueError(f"{name}: no texts (an empty list)")
    for row, text in enumerate(texts):
        if isinstance(text, bytes):
            texts[row] = text = text.decode("utf-8")
        if not isinstance(text, str):
            raise ValueError(f"{name}[{row}]: expected a string, got "
                             f"{'None' if text is None else type(text).__name__}")
        if not text.strip():
            raise ValueError(f"{name}[{row}]: the text is empty")
    return texts


def _texts_and_pairs(x, name):
    """``(texts, pairs or None)`` of ``x``."""
    if isinstance(x, tuple) and len(x) == 2 and not isinstance(x[0], str):
        texts, pairs = _column(x[0], f"{name}[0]"), _column(x[1], f"{name}[1]")
        if len(texts) != len(pairs):
            raise ValueError(f"{name}: {len(texts)} texts but {len(pairs)} second texts")
        return _check_texts(texts, f"{name}[0]"), _check_texts(pairs, f"{name}[1]")
    texts = _column(x, name)
    if texts and all(isinstance(t, (tuple, list)) and len(t) == 2 for t in texts):
        return (_check_texts([t[0] for t in texts], f"{name}[:, 0]"),
                _check_texts([t[1] for t in texts], f"{name}[:, 1]"))
    return _check_texts(texts, name), None


def _labels(y, count, name="y"):
    if y is None:
        return None
    labels = _column(y, name)
    if len(labels) != count:
        raise ValueError(f"{name}: {len(labels)} labels for {count} texts")
    for row, label in enumerate(labels):
        if label is None or (isinstance(label, float) and np.isnan(label)):
            raise ValueError(f"{name}[{row}]: the label is missing")
        if isinstance(label, (bytes, np.bytes_)):
            labels[row] = label.decode("utf-8")
    return labels


def _from_dataset(dataset):
    """``(x, y)`` of a ``tf.data.Dataset`` of texts or of ``(texts, labels)``."""
    texts, labels = [], []
    for element in dataset.as_numpy_iterator():
        text, label = element if isinstance(element, tuple) else (element, None)
        batch = np.atleast_1d(text)
        texts.extend(batch.tolist())
        if label is not None:
            labels.extend(np.atleast_1d(label).tolist())
    return texts, (labels or None)


def python_examples(x, y=None, name="x"):
    """``TextExamples`` of Python texts (and labels), checked.

    Args:
        x: texts, pairs, or a ``tf.data.Dataset`` (see the module's text).
        y: labels (names or numbers), one per text, or None.
        name: the argument's name, for errors.

    Example:
    >>> python_examples(["good film", "bad film"], ["pos", "neg"]).labels
    ['pos', 'neg']
    >>> python_examples(["good film", None])
    Traceback (most recent call last):
    ...
    ValueError: x[1]: expected a string, got None
    """
    if hasattr(x, "as_numpy_iterator"):  # a tf.data.Dataset
        if y is not None:
            raise ValueError("y: give the labels inside the dataset, not beside it")
        x, y = _from_dataset(x)
    texts, pairs = _texts_and_pairs(x, name)
    labels = _labels(y, len(texts))
    return TextExamples(texts, pairs, labels, list(range(len(texts))))


def python_sentences(x, y=None, name="x"):
    """``(words, tags or None, row)`` sentences of Python input, checked:
    ``x`` a list of sentences (each a list of words, or a string split on
    whitespace), ``y`` a list of tag lists of the same lengths.

    Example:
    >>> (words, tags, row), = python_sentences(["Ada lives in London"],
    ...                                        [["B-PER", "O", "O", "B-LOC"]])
    >>> tags
    ['B-PER', 'O', 'O', 'B-LOC']
    """
    sentences = _column(x, name)
    if not sentences:
        raise ValueError(f"{name}: no sentences (an empty list)")
    tags = None if y is None else _column(y, "y")
    if tags is not None and len(tags) != len(sentences):
        raise ValueError(f"y: {len(tags)} tag lists for {len(sentences)} sentences")
    out = []
    for row, sentence in enumerate(sentences):
        words = sentence.split() if isinstance(sentence, str) else _column(sentence, f"{name}[{row}]")
        if not words or not all(isinstance(w, str) and w.strip() for w in words):
            raise ValueError(f"{name}[{row}]: expected a sentence of non-empty words")
        sentence_tags = None
        if tags is not None:
            sentence_tags = [str(t) for t in _column(tags[row], f"y[{row}]")]
            if len(sentence_tags) != len(words):
                raise ValueError(f"y[{row}]: {len(sentence_tags)} tags for {len(words)} words")
        out.append((list(words), sentence_tags, row))
    return out


def python_questions(x, y=None, name="x"):
    """``QAExample``s of Python input, checked: ``x`` is ``(questions,
    contexts)``; ``y`` one answer per question: its text (found in the
    context), ``{"text", "answer_start"}``, or ``""``/None for a question
    with no answer (SQuAD v2).

    Example:
    >>> python_questions((["Who?"], ["Ada wrote it."]), ["Ada"])[0].answers
    [('Ada', 0)]
    """
    from albert_keras.tasks.readers import QAExample

    if not (isinstance(x, tuple) and len(x) == 2):
        raise ValueError(f"{name}: expected (questions, contexts)")
    questions, contexts = (_check_texts(_column(x[0], f"{name}[0]"), f"{name}[0]"),
                           _check_texts(_column(x[1], f"{name}[1]"), f"{name}[1]"))
    if len(questions) != len(contexts):
        raise ValueError(f"{name}: {len(questions)} questions but {len(contexts)} contexts")
    answers = [None] * len(questions) if y is None else _column(y, "y")
    if len(answers) != len(questions):
        raise ValueError(f"y: {len(answers)} answers for {len(questions)} questions")
    out = []
    for row, (question, context, answer) in enumerate(zip(questions, contexts, answers)):
        spans = [] if answer in (None, "") else [_span(answer, context, row)]
        out.append(QAExample(str(row), question, context, spans, y is not None and not spans))
    return out


def _span(answer, context, row):
    """``(text, start)`` of one answer, which must be in its context."""
    if isinstance(answer, dict):
        text, start = answer.get("text"), answer.get("answer_start")
    else:
        text, start = answer, None
    if not isinstance(text, str) or not text:
        raise ValueError(f"y[{row}]: expected an answer text, got {type(text).__name__}")
    start = context.find(text) if start is None else start
    if not isinstance(start, int) or start < 0 or context[start:start + len(text)] != text:
        raise ValueError(f"y[{row}]: the answer {text!r} is not in its context"
                         + (f" at character {start}" if isinstance(start, int) and start >= 0
                            else ""))
    return text, start


def python_choices(x, y=None, name="x"):
    """``ChoiceExamples`` of Python input, checked: ``x`` is ``(contexts,
    choices)`` or ``(contexts, questions, choices)`` with the same number of
    choices for every context; ``y`` the right choice's index or text. Each
    pair the model reads is ``(context, question + " " + choice)``, as a
    file's rows give it.

    Example:
    >>> python_choices((["A fox ran."], [["it ran", "it sat"]]), [0]).choices
    [['it ran', 'it sat']]
    """
    from albert_keras.tasks.readers import ChoiceExamples

    if not (isinstance(x, tuple) and len(x) in (2, 3)):
        raise ValueError(f"{name}: expected (contexts, choices) or (contexts, questions, choices)")
    contexts = _check_texts(_column(x[0], f"{name}[0]"), f"{name}[0]")
    questions = _column(x[1], f"{name}[1]") if len(x) == 3 else [""] * len(contexts)
    options = _column(x[-1], f"{name}[{len(x) - 1}]")
    if not len(contexts) == len(questions) == len(options):
        raise ValueError(f"{name}: {len(contexts)} contexts, {len(questions)} questions and "
                         f"{len(options)} choice lists")
    labels = None if y is None else _column(y, "y")
    if labels is not None and len(labels) != len(contexts):
        raise ValueError(f"y: {len(labels)} labels for {len(contexts)} questions")
    seconds, ids = [], []
    count = len(_column(options[0], f"{name}[-1][0]")) if options else 0
    for row, (question, choices) in enumerate(zip(questions, options)):
        choices = _check_texts(_column(choices, f"{name}[-1][{row}]"), f"{name}[-1][{row}]")
        if len(choices) < 2 or len(choices) != count:
            raise ValueError(f"{name}[-1][{row}]: {len(choices)} choices; every question needs "
                             f"the same number, 2 or more")
        seconds.append([f"{question or ''} {c}".strip() for c in choices])
        if labels is not None:
            ids.append(_choice_id(labels[row], choices, row))
    return ChoiceExamples(contexts, seconds, ids if labels is not None else None,
                          list(range(len(contexts))))


def _choice_id(label, choices, row):
    if isinstance(label, str) and not label.isdigit():
        if label not in choices:
            raise ValueError(f"y[{row}]: {label!r} is not one of the choices")
        return choices.index(label)
    index = int(label)
    if not 0 <= index < len(choices):
        raise ValueError(f"y[{row}]: {index} is out of range 0..{len(choices) - 1}")
    return index
