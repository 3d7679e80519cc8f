"""Training: the pretraining driver, its objectives, datasets, strategies and callbacks."""
