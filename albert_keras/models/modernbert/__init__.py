"""ModernBERT (Answer.AI and LightOn, 2024) and Ettin's encoders: rotary
attention alternating full and sliding-window layers, GeGLU, pre-norm."""
