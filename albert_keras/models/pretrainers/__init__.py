"""Pretraining models: an encoder with its pretraining heads
(``EncoderPretrainer``: masked LM and sentence order), ELECTRA's generator
and discriminator pair (``ElectraPretrainer``) and the discriminator alone
(``TokenDiscriminator``)."""
