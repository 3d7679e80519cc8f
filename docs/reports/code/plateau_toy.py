"""The loss plateau on a toy replaced-token task, ours against HF torch.

Every sequence draws its tokens from one of two 20-id "topics"; three
positions per row are replaced by ids drawn from both topics, and a per-token
binary head says which were replaced. A replacement from the other topic is
visible from the rest of the row, so a model that pools its context reaches
AUC ~0.83; one that does not stays at ~0.53 (the loss at the prior, 0.462).
Both our encoder and HF's ``AlbertModel`` (same size, Adam 1e-3, batch 64)
sit on that plateau for hundreds of steps before they find the context, and
how long they sit depends on the initializer range.

``--arm ours`` trains our ``AlbertEncoder`` + ``ReplacedTokenHead`` with
``model.fit`` and our ``LayerwiseAdamW`` (no decay); ``--arm keras_adam`` the
same with ``keras.optimizers.Adam``; ``--arm lamb`` with our ``LayerwiseLamb``
at ``--lamb-lr`` (decay 0.01, clipped at 1.0, as the small-corpus run); ``--arm hf``
trains ``transformers.AlbertModel`` with a head of
the same layout in torch. Each (arm, initializer range, seed) gets its held-out
AUC after every epoch of 64 steps and the first step at which the AUC passed
0.7 (``null``: not within the run). Results go to ``--out`` as they come,
beside the runs already there.

    python docs/reports/code/plateau_toy.py --arm ours hf --init 0.02 0.1 --seeds 0 1 \\
        --out docs/reports/results/plateau_toy.json
"""

import argparse
import os

import numpy as np

from albert_keras.files import read_json
from albert_keras.files import write_json

VOCAB, SEQ, HIDDEN, STEPS_PER_EPOCH, BATCH = 60, 16, 64, 64, 64


def toy(rng, n):
    """``(token_ids [n, SEQ], labels [n, SEQ])``; ``[CLS]`` (2) first."""
    topic = rng.integers(0, 2, (n, 1))
    ids = 5 + 20 * topic + rng.integers(0, 20, (n, SEQ))
    ids[:, 0] = 2
    labels = np.zeros_like(ids)
    for row in range(n):
        positions = rng.choice(np.arange(1, SEQ), 3, replace=False)
        new = rng.integers(5, 45, 3)
        labels[row, positions] = new != ids[row, positions]
        ids[row, positions] = new
    return ids.astype("int32"), labels.astype("float32")


def auc(labels, scores):
    """ROC AUC by ranks (ties averaged), so no extra dependency is needed."""
    from scipy.stats import rankdata

    labels, ranks = labels.ravel() > 0, rankdata(scores.ravel())
    positives = labels.sum()
    negatives = labels.size - positives
    return float((ranks[labels].sum() - positives * (positives + 1) / 2)
                 / (positives * negatives))


def run_ours(init, seed, epochs, data, optimizer="adamw", lamb_lr=8e-3):
    import keras

    from albert_keras import AlbertConfig
    from albert_keras import AlbertEncoder
    from albert_keras.heads.replaced_token_head import ReplacedTokenHead
    from albert_keras.optimizers.optimizer import LayerwiseAdamW
    from albert_keras.optimizers.optimizer import LayerwiseLamb

    keras.utils.set_random_seed(seed)
    config = AlbertConfig(vocab_size=VOCAB, embedding_size=32, hidden_size=HIDDEN,
                          num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                          max_position_embeddings=SEQ, initializer_range=init)
    encoder = AlbertEncoder(config)
    head = ReplacedTokenHead(HIDDEN, initializer_range=init)
    inputs = {k: keras.Input((None,), dtype="int32", name=k)
              for k in ("token_ids", "segment_ids", "padding_mask")}
    model = keras.Model(inputs, head(encoder(inputs)["sequence_output"]))
    # Our AdamW without decay, not keras.optimizers.Adam: Keras' Adam squares
    # an embedding gradient slice by slice, which steps frequent rows up to
    # sqrt(n) times too far and (measured here) delays the escape past 1,000
    # steps where torch's Adam escapes by ~600.
    if optimizer == "keras_adam":
        optimizer = keras.optimizers.Adam(1e-3)
    elif optimizer == "lamb":  # the small-corpus recipe's optimizer: decay 0.01, clipped at 1.0
        optimizer = LayerwiseLamb(learning_rate=lamb_lr, weight_decay=0.01, epsilon=1e-6,
                               global_clipnorm=1.0)
    else:
        optimizer = LayerwiseAdamW(learning_rate=1e-3, weight_decay=0.0, epsilon=1e-7)
    model.compile(optimizer=optimizer,
                  loss=keras.losses.BinaryCrossentropy(from_logits=True))
    (ids, labels), (eval_ids, eval_labels) = data

    def feed(token_ids):
        return {"token_ids": token_ids, "segment_ids": 0 * token_ids,
                "padding_mask": np.ones_like(token_ids)}

    for _ in range(epochs):
        model.fit(feed(ids), labels, batch_size=BATCH, epochs=1, verbose=0)
        yield auc(eval_labels, model.predict(feed(eval_ids), batch_size=256, verbose=0))


def run_hf(init, seed, epochs, data):
    import torch
    import transformers

    torch.manual_seed(seed)
    config = transformers.AlbertConfig(
        vocab_size=VOCAB, embedding_size=32, hidden_size=HIDDEN, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=128, max_position_embeddings=SEQ,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, initializer_range=init)
    encoder = transformers.AlbertModel(config, add_pooling_layer=False)
    head = torch.nn.Sequential(torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.GELU("tanh"),
                               torch.nn.Linear(HIDDEN, 1))
    for layer in (head[0], head[2]):
        torch.nn.init.normal_(layer.weight, std=init)
        torch.nn.init.zeros_(layer.bias)
    optimizer = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=1e-3,
                                 eps=1e-7)
    (ids, labels), (eval_ids, eval_labels) = data
    ids, labels = torch.tensor(ids).long(), torch.tensor(labels)
    for _ in range(epochs):
        order = torch.randperm(len(ids))
        for start in range(0, len(ids), BATCH):
            rows = order[start:start + BATCH]
            logits = head(encoder(ids[rows]).last_hidden_state).squeeze(-1)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            scores = head(encoder(torch.tensor(eval_ids).long()).last_hidden_state)
        yield auc(eval_labels, scores.squeeze(-1).numpy())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arm", nargs="+", default=["ours", "hf"],
                        choices=["ours", "keras_adam", "lamb", "hf"])
    parser.add_argument("--lamb-lr", type=float, default=8e-3,
                        help="the lamb arm's learning rate (no warmup)")
    parser.add_argument("--init", nargs="+", type=float, default=[0.02, 0.05, 0.1])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--epochs", type=int, default=16)
    parser.add_argument("--out", default="docs/reports/results/plateau_toy.json")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    data = (toy(rng, STEPS_PER_EPOCH * BATCH), toy(rng, 512))
    results = {"settings": {
        "task": "two 20-id topics, 3 of 16 positions replaced by ids of either topic",
        "model": f"hidden {HIDDEN}, 2 layers, 4 heads, FFN 128, embedding 32, no dropout",
        "optimizer": ("Adam 1e-3 (lamb arm: LayerwiseLamb at the rate in its name, decay 0.01, "
                      "clipped at 1.0), batch 64, 64 steps per epoch, the same data for every arm"),
        "escape": "first step at which the held-out AUC passed 0.7",
    }, "runs": {}}
    if os.path.exists(args.out):  # runs from earlier calls stay; the same run is replaced
        results["runs"] = read_json(args.out)["runs"]
    arms = {"ours": run_ours, "hf": run_hf,
            "keras_adam": lambda *a: run_ours(*a, optimizer="keras_adam"),
            "lamb": lambda *a: run_ours(*a, optimizer="lamb", lamb_lr=args.lamb_lr)}
    for init in args.init:
        for seed in args.seeds:
            for arm in args.arm:
                curve = []
                for value in arms[arm](init, seed, args.epochs, data):
                    curve.append(round(value, 4))
                    escaped = next((STEPS_PER_EPOCH * (i + 1) for i, a in enumerate(curve)
                                    if a > 0.7), None)
                    name = f"lamb {args.lamb_lr}" if arm == "lamb" else arm
                    results["runs"][f"{name} init {init} seed {seed}"] = {
                        "auc_by_epoch": curve, "escape_step": escaped}
                    write_json(args.out, results)
                print(arm, init, seed, "escape step", escaped, "final AUC", curve[-1],
                      flush=True)


if __name__ == "__main__":
    main()
