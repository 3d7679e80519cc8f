"""What a sequence classifier's head reads, free of Keras (fine-tuning's
flags offer these before Keras is imported)."""

# The tanh pooler over [CLS] (ALBERT's), the last layer's mean over real
# tokens, or the two concatenated.
CLASSIFIER_POOLINGS = ("pooled", "mean", "both")
