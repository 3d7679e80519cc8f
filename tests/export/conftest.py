import os

import pytest


@pytest.fixture(scope="session")
def classifier_folder(tmp_path_factory, init_folder, task_files):
    """A small fine-tuned classifier folder (trained a few epochs, so its
    logits are not all alike)."""
    from albert_keras.tasks.finetune import finetune
    from albert_keras.tasks.finetune_config import FinetuneConfig

    out = os.path.join(str(tmp_path_factory.mktemp("cls")), "model")
    cfg = FinetuneConfig(task="classify", epochs=4, batch_size=8, sequence_length=32,
                         learning_rate=1e-3)
    finetune(init_folder, task_files["cls_train"], task_files["cls_eval"], out, cfg)
    return out
