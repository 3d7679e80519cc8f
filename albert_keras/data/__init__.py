"""Data: corpora, SOP pairs, masking, TFRecord shards and tf.data readers."""
