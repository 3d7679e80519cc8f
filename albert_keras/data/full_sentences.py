"""RoBERTa's FULL-SENTENCES inputs: whole sentences packed across documents.

RoBERTa (Liu et al., 2019, section 4.2) drops the sentence task and fills
every input with whole sentences read contiguously from one or more
documents, up to the sequence length; where one document ends, the next one
starts after an extra separator token. No input is cut short, so nearly
every position carries text. Written here because no library packs
SentencePiece or WordPiece ids this way (fairseq's ``TokenBlockDataset``
works on its own binarized files, not on ours).

Packing, for one ordering of the documents:

1. Sentences are appended to the current input while they fit in
   ``max_seq_length - 2`` ids (``[CLS]`` and the closing ``[SEP]`` take the
   other two).
2. Between the last sentence of a document and the first of the next one in
   the same input goes one ``[SEP]``. An input never starts or ends with it.
3. A sentence that does not fit starts the next input; one longer than a
   whole input is cut into input-sized pieces (the only place a sentence is
   split).

Every packed input has one segment (segment ids 0) and no sentence label.
"""


def pack_full_sentences(documents, max_seq_length, sep_id):
    """Packs whole sentences of consecutive documents into inputs.

    Args:
        documents: tokenized documents in the order to read them, each a
            list of sentences (lists of ids). Empty documents and sentences
            are skipped.
        max_seq_length: the packed length, ``[CLS]`` and ``[SEP]`` included
            (at least 3).
        sep_id: the separator id put between documents.

    Returns:
        A list of id lists, each without ``[CLS]``/``[SEP]`` at its ends and at
        most ``max_seq_length - 2`` long.

    Example:
    >>> pack_full_sentences([[[5, 6], [7]], [[8]], [[9, 10, 11]]], 8, sep_id=3)
    [[5, 6, 7, 3, 8], [9, 10, 11]]
    """
    limit = max_seq_length - 2
    if limit < 1:
        raise ValueError(f"max_seq_length must be at least 3, got {max_seq_length}")
    inputs, current = [], []
    for document in documents:
        new_document = True
        for sentence in document:
            for start in range(0, len(sentence), limit):
                piece = list(sentence[start:start + limit])
                separator = [sep_id] if new_document and current else []
                if len(current) + len(separator) + len(piece) > limit:
                    inputs.append(current)
                    current, separator = [], []
                current += separator + piece
                new_document = False
    if current:
        inputs.append(current)
    return inputs
