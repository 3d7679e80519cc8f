"""transformers' form of a SentencePiece model: which tokenizer class reads
it, under which file name, with which options and special tokens.

ALBERT's special pieces first (``<pad> <unk> [CLS] [SEP] [MASK]``) means
``AlbertTokenizer`` and ``spiece.model``; DeBERTa's (``[PAD] [CLS] [SEP]
[UNK]``, ``[MASK]`` after the last piece) means ``DebertaV2Tokenizer`` and
``spm.model``. Works from the model's bytes: no TensorFlow is needed.

Example:
>>> files, config = sentencepiece_hf_form(open("spm.model", "rb").read(), {})  # doctest: +SKIP
>>> config["tokenizer_class"]  # doctest: +SKIP
'AlbertTokenizer'
"""

from albert_keras.text.special_ids import CLS_ID
from albert_keras.text.spm_model import read_model_proto
from albert_keras.text.spm_model import special_ids_of


def sentencepiece_hf_form(data, options):
    """``({file name: bytes}, tokenizer_config)`` of the SentencePiece model
    ``data`` (bytes) with our ``options`` (``lowercase``, ``keep_accents``)."""
    _, facts, source = read_model_proto(data)
    pieces = [piece for piece, _ in facts.pieces]
    ids = special_ids_of(facts, source)
    options = {"lowercase": False, "keep_accents": True, **options}
    deberta = ids["cls"] != CLS_ID  # special_ids_of tries ALBERT's convention first
    tokens = {f"{name}_token": pieces[i] if i < len(pieces) else "[MASK]"
              for name, i in ids.items()}
    if deberta:
        if not options["keep_accents"]:
            raise ValueError("the tokenizer strips accents, which transformers' "
                             "DebertaV2Tokenizer cannot do; the HF folder would cut text "
                             "differently")
        name, config = "spm.model", {"tokenizer_class": "DebertaV2Tokenizer",
                                     "split_by_punct": False}
    else:
        name, config = "spiece.model", {"tokenizer_class": "AlbertTokenizer",
                                        "keep_accents": options["keep_accents"],
                                        "remove_space": True}
    return {name: data}, {**config, "do_lower_case": options["lowercase"], **tokens}
