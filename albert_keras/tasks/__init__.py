"""Fine-tuning tasks: readers, features, decoding, metrics and the trainer."""
