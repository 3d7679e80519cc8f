"""The special ids of ALBERT's SentencePiece models, free of Keras.

Example:
>>> ALBERT_SPECIAL_IDS["cls"]
2
"""

# Special token ids (the ALBERT convention: the original SentencePiece models put them first).
PAD_ID = 0
UNK_ID = 1
CLS_ID = 2
SEP_ID = 3
MASK_ID = 4
# The special ids of ALBERT's SentencePiece models (they put the special
# pieces first). A WordPiece vocabulary has its own (BERT's [CLS] is 101):
# code takes them from ``Tokenizer.special_ids`` and falls back to these.
ALBERT_SPECIAL_IDS = {"pad": PAD_ID, "unk": UNK_ID, "cls": CLS_ID, "sep": SEP_ID,
                      "mask": MASK_ID}
