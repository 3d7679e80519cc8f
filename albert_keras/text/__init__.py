"""Text: SentencePiece training, the in-graph tokenizer and the packer."""
