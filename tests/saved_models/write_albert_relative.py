"""Wrote albert_relative_classifier.keras and albert_relative_outputs.npz at
commit f348750, when AlbertConfig still held DeBERTa's fields (run there with
PYTHONPATH pointing at that checkout; kept for the record, not run by the tests)."""
import os

import keras
import numpy as np

from albert_keras import AlbertConfig
from albert_keras import AlbertEncoder
from albert_keras import SequenceClassifier

HERE = os.path.dirname(os.path.abspath(__file__))
keras.utils.set_random_seed(0)
stored = np.load(os.path.join(HERE, "outputs.npz"))
x = {k.split("/", 1)[1]: stored[k] for k in stored.files if k.startswith("inputs/")}
config = AlbertConfig(vocab_size=60, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                      relative_attention=True, position_buckets=4, share_att_key=True,
                      norm_rel_ebd="layer_norm", position_biased_input=False, type_vocab_size=0)
model = SequenceClassifier(AlbertEncoder(config), 3)
x["segment_ids"] = np.zeros_like(x["segment_ids"])
np.savez(os.path.join(HERE, "albert_relative_outputs.npz"),
         logits=np.asarray(model(x, training=False)["logits"]), **{f"inputs/{k}": v for k, v in x.items()})
model.save(os.path.join(HERE, "albert_relative_classifier.keras"))
