"""Random HF transformers models saved to disk, and inputs to compare on."""

import numpy as np
import torch
import transformers

ALBERT = dict(
    vocab_size=99,
    embedding_size=16,
    hidden_size=32,
    num_hidden_layers=4,
    num_hidden_groups=2,
    inner_group_num=2,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
    hidden_act="gelu_new",
)
BERT = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=3,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
)


def make_hf_model(cls_name, folder, seed=0, **config):
    """Builds ``transformers.<cls_name>``, perturbs every weight, saves it."""
    torch.manual_seed(seed)
    base = transformers.AlbertConfig if cls_name.startswith("Albert") else transformers.BertConfig
    defaults = ALBERT if cls_name.startswith("Albert") else BERT
    model = getattr(transformers, cls_name)(base(**{**defaults, **config})).eval()
    with torch.no_grad():
        # Random LayerNorms and biases too, so a swapped tensor cannot hide.
        for _, p in model.named_parameters():
            p.add_(torch.randn_like(p) * 0.2)
    model.save_pretrained(folder)
    return model


def sample_inputs(batch=3, seq=12, vocab=99):
    rng = np.random.default_rng(1)
    ids = rng.integers(5, vocab, (batch, seq)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, 8:] = 0
    mask[2, 5:] = 0
    segments = np.zeros_like(ids)
    segments[:, 6:] = 1
    return {"token_ids": ids * mask, "segment_ids": segments * mask, "padding_mask": mask}


def run_hf(model, inputs):
    with torch.no_grad():
        return model(
            input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
            attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long),
            output_hidden_states=True,
        )


def all_positions(inputs):
    batch, seq = inputs["token_ids"].shape
    return np.tile(np.arange(seq, dtype="int32"), (batch, 1))


def max_diff(ours, theirs, mask=None):
    ours = np.asarray(ours)
    theirs = np.asarray(theirs.detach().numpy() if hasattr(theirs, "detach") else theirs)
    diff = np.abs(ours - theirs)
    if mask is not None:
        diff = diff[mask.astype(bool)]
    return float(diff.max())
