"""How inputs are cut to the sequence length: the modes the packer
(``albert_keras.text.packer``) and the flags offer, free of Keras."""

# How inputs are cut to the sequence length (``text.packer``). Pairs: the
# longer text loses a piece at a time, or the second text is cut first.
# Single texts: keep the start, the end, or both (a quarter of the room for
# the start, the rest for the end: the best cut for long reviews and news in
# Sun et al. 2019, "How to Fine-Tune BERT for Text Classification").
TRUNCATE_MODES = ("longest_first", "waterfall", "head", "tail", "head+tail")
DEFAULT_TRUNCATE = "longest_first"  # what BERT's and HF's tokenizers do
SINGLE_TEXT_TRUNCATIONS = ("head", "tail", "head+tail")
