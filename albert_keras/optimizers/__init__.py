"""LAMB and AdamW with ALBERT's warmup and polynomial decay.

They live below the training package so that loading a saved model (which
holds its optimizer) never imports the training driver.
"""
