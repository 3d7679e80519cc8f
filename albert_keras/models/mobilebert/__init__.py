"""MobileBERT: the bottleneck BERT built for phones (Sun et al., 2020)."""
