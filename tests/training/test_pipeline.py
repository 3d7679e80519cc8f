"""run_pretraining: a kept stage must have been made with this call's settings."""

import json
import os

import pytest

from albert_keras.data.create import create_pretraining_data
from albert_keras.data.data_config import DataConfig
from albert_keras.training.pipeline import PipelineConfig
from albert_keras.training.pipeline import resolved_data_config
from albert_keras.training.pipeline import run_pretraining
from albert_keras.training.pretrain_config import PretrainConfig
from albert_keras.training.recipes import resolve_recipe


def test_kept_data_made_with_other_settings_is_refused_before_training(
        corpus_file, spm_path, tmp_path):
    out = str(tmp_path / "run")
    create_pretraining_data([corpus_file], spm_path, os.path.join(out, "data"),
                            DataConfig(dupe_factor=1, max_seq_length=32, seed=3))
    pipeline = PipelineConfig(out=out, input=[corpus_file], tokenizer=spm_path,
                              short_seq_fraction=0)
    with pytest.raises(ValueError) as error:
        run_pretraining(pipeline, data_config=DataConfig(dupe_factor=2, max_seq_length=32),
                        train_config=PretrainConfig(seed=3, total_steps=2, steps_per_epoch=1,
                                                    warmup_steps=0))
    message = str(error.value)
    assert "\n" not in message and "made with other settings" in message
    assert "dupe_factor 1 (now 2)" in message
    assert sorted(os.listdir(out)) == ["data"]  # nothing trained, nothing written


def test_auto_is_mlm_on_sentence_pairs_only_for_the_built_in_corpus():
    def resolved(pipeline, **train):
        t = PretrainConfig(**train)
        packing = resolved_data_config(None, t).packing
        return resolve_recipe(pipeline, t).objective, packing

    assert resolved(PipelineConfig()) == ("mlm", "pairs")  # the small-corpus run
    # your own corpus, a data folder or a model to continue: ALBERT's default
    assert resolved(PipelineConfig(input=["corpus.txt"])) == ("auto", "pairs")
    assert resolved(PipelineConfig(data="runs/data")) == ("auto", "pairs")
    assert resolved(PipelineConfig(), init="runs/model") == ("auto", "pairs")
    # a named objective is kept, on the built-in corpus too
    assert resolved(PipelineConfig(), objective="mlm_sop") == ("mlm_sop", "pairs")
    assert resolved(PipelineConfig(), objective="mlm") == ("mlm", "full_sentences")


def test_the_built_in_corpus_gets_alibi_unless_told_otherwise():
    def overrides(pipeline, **train):
        return resolve_recipe(pipeline, PretrainConfig(**train)).model_overrides

    main_job = {"position_bias": "alibi", "alibi_slope_scale": 4.0}
    assert overrides(PipelineConfig()) == {**main_job, "num_hidden_layers": 2}
    assert overrides(PipelineConfig(), objective="rtd") == main_job
    # the user's overrides are kept, and win
    assert overrides(PipelineConfig(), model_overrides={"num_hidden_layers": 4}) == {
        **main_job, "num_hidden_layers": 4}
    assert overrides(PipelineConfig(), model_overrides={"alibi_slope_scale": 1.0}) == {
        "position_bias": "alibi", "alibi_slope_scale": 1.0, "num_hidden_layers": 2}
    assert overrides(PipelineConfig(), model_overrides={"position_bias": "none"}) == {
        "position_bias": "none", "num_hidden_layers": 2}
    # a family with rotary positions has none to replace
    assert overrides(PipelineConfig(), preset="modernbert_tiny") == {}
    # ALBERT's attention everywhere else
    for pipeline, train in ((PipelineConfig(input=["corpus.txt"]), {}),
                            (PipelineConfig(data="runs/data"), {}),
                            (PipelineConfig(), {"init": "runs/model"})):
        assert overrides(pipeline, **train) == {}


def test_the_built_in_corpus_gets_its_own_rate_and_warmup_unless_told_otherwise():
    def schedule(pipeline, **train):
        t = resolve_recipe(pipeline, PretrainConfig(**train)).with_defaults()
        return t.learning_rate, t.warmup_steps

    assert schedule(PipelineConfig()) == (1.6e-2, 150)  # the small-corpus run
    # values the user gives win, even when they equal the library's defaults
    assert schedule(PipelineConfig(), learning_rate=8e-3) == (8e-3, 150)
    assert schedule(PipelineConfig(), warmup_steps=40) == (1.6e-2, 40)
    # LAMB's defaults everywhere else
    for pipeline, train in ((PipelineConfig(input=["corpus.txt"]), {}),
                            (PipelineConfig(data="runs/data"), {}),
                            (PipelineConfig(), {"init": "runs/model"})):
        assert schedule(pipeline, **train) == (8e-3, 40)


def test_the_built_in_corpus_masks_more_unless_told_otherwise():
    def rate(pipeline, **train):
        return resolve_recipe(pipeline, PretrainConfig(**train)).mask_rate

    assert rate(PipelineConfig()) == 0.4  # the small-corpus run
    assert rate(PipelineConfig(), mask_rate=0.15) == 0.15  # given, even BERT's
    # stored masks have the data's rate: nothing to choose
    assert rate(PipelineConfig(), dynamic_masking=False) is None
    # measured for mlm and rtd; mlm_sop keeps the data's rate
    assert rate(PipelineConfig(), objective="rtd") == 0.4
    assert rate(PipelineConfig(), objective="rtd", mask_rate=0.15) == 0.15
    assert rate(PipelineConfig(), objective="mlm_sop") is None
    # a family pretrained at its own rate keeps it (ModernBERT's 30%), unless told
    assert rate(PipelineConfig(), preset="modernbert_tiny") == 0.3
    assert rate(PipelineConfig(), preset="modernbert_tiny", mask_rate=0.4) == 0.4
    # the data's rate everywhere else
    for pipeline, train in ((PipelineConfig(input=["corpus.txt"]), {}),
                            (PipelineConfig(data="runs/data"), {}),
                            (PipelineConfig(), {"init": "runs/model"})):
        assert rate(pipeline, **train) is None


def test_the_main_job_trains_two_layers_for_longer_unless_told_otherwise():
    def shape(pipeline, **train):
        t = resolve_recipe(pipeline, PretrainConfig(**train)).with_defaults()
        return t.model_overrides.get("num_hidden_layers"), t.total_steps

    assert shape(PipelineConfig()) == (2, 1600)  # the small-corpus run
    assert shape(PipelineConfig(), total_steps=300) == (2, 300)  # given steps win
    # a depth, preset or objective of the user's keeps the 800 steps
    assert shape(PipelineConfig(), model_overrides={"num_hidden_layers": 4}) == (4, 800)
    assert shape(PipelineConfig(), preset="albert_base") == (None, 800)
    assert shape(PipelineConfig(), objective="rtd") == (None, 800)
    for pipeline, train in ((PipelineConfig(input=["corpus.txt"]), {}),
                            (PipelineConfig(data="runs/data"), {}),
                            (PipelineConfig(), {"init": "runs/model"})):
        assert shape(pipeline, **train) == (None, 800)


def test_an_unset_rate_and_warmup_are_recorded_as_the_values_used(
        tmp_path, corpus_file, spm_path):
    out = str(tmp_path / "run")
    run_pretraining(PipelineConfig(out=out, input=[corpus_file], tokenizer=spm_path,
                                   short_seq_fraction=0),
                    data_config=DataConfig(dupe_factor=1, max_seq_length=32),
                    train_config=PretrainConfig(total_steps=40, steps_per_epoch=40, batch_size=8,
                                                eval_steps=0,
                                                model_overrides={"num_hidden_layers": 1}))
    with open(os.path.join(out, "train_config.json")) as f:
        recorded = json.load(f)
    assert (recorded["learning_rate"], recorded["warmup_steps"]) == (8e-3, 40)


def test_recipe_main_job_applies_to_any_corpus_and_albert_to_none():
    def resolved(pipeline, **train):
        t = resolve_recipe(pipeline, PretrainConfig(**train)).with_defaults()
        return (t.objective, t.model_overrides.get("num_hidden_layers"), t.learning_rate,
                t.mask_rate, t.total_steps)

    main_job = ("mlm", 2, 1.6e-2, 0.4, 1600)
    albert = ("auto", None, 8e-3, None, 800)
    assert resolved(PipelineConfig()) == main_job
    for recipe, expected in (("small_corpus", main_job), ("albert", albert)):
        for pipeline in (PipelineConfig(recipe=recipe),
                         PipelineConfig(input=["corpus.txt"], recipe=recipe),
                         PipelineConfig(data="runs/data", recipe=recipe)):
            assert resolved(pipeline) == expected
    # given values still win over the recipe
    assert resolved(PipelineConfig(data="runs/data", recipe="small_corpus"),
                    learning_rate=1e-3, total_steps=4800) == ("mlm", 2, 1e-3, 0.4, 4800)
    # ALBERT's on the built-in corpus keeps ALBERT's attention too
    assert resolve_recipe(PipelineConfig(recipe="albert"),
                           PretrainConfig()).model_overrides == {}


def test_recipe_errors_and_the_line_that_says_which_recipe_runs(caplog):
    with pytest.raises(ValueError, match="recipe small_corpus makes a new model; it cannot "
                                         "continue init runs/model"):
        resolve_recipe(PipelineConfig(recipe="small_corpus"), PretrainConfig(init="runs/model"))
    with pytest.raises(ValueError, match="recipe 'main-job': expected one of auto, "
                                         "small_corpus, albert"):
        resolve_recipe(PipelineConfig(recipe="main-job"), PretrainConfig())
    with caplog.at_level("INFO", logger="albert_keras"):
        resolve_recipe(PipelineConfig(data="runs/data"), PretrainConfig())
        resolve_recipe(PipelineConfig(data="runs/data", recipe="small_corpus"), PretrainConfig())
        resolve_recipe(PipelineConfig(), PretrainConfig())
    said = [r.getMessage() for r in caplog.records if "recipe" in r.getMessage()]
    assert said == ["with --data: ALBERT's settings for what is not given "
                    "(--recipe small_corpus for the small-corpus recipe's)"]
    # the old name still works, and says the new one
    caplog.clear()
    with caplog.at_level("INFO", logger="albert_keras"):
        old = resolve_recipe(PipelineConfig(recipe="main_job"), PretrainConfig())
    assert old == resolve_recipe(PipelineConfig(), PretrainConfig())
    assert any("now called small_corpus" in r.getMessage() for r in caplog.records)


def test_another_objective_says_it_keeps_the_presets_depth(caplog):
    with caplog.at_level("INFO", logger="albert_keras"):
        t = resolve_recipe(PipelineConfig(recipe="small_corpus"), PretrainConfig(objective="rtd"))
        resolve_recipe(PipelineConfig(recipe="small_corpus"), PretrainConfig(
            objective="rtd", model_overrides={"num_hidden_layers": 2}))
        resolve_recipe(PipelineConfig(recipe="small_corpus"), PretrainConfig(objective="mlm"))
    assert "num_hidden_layers" not in t.model_overrides
    said = [r.getMessage() for r in caplog.records if "depth" in r.getMessage()]
    assert said == ["--recipe small_corpus with --objective rtd: albert_tiny's own depth; the "
                    "small-corpus recipe's 2 layers and 1,600 steps are mlm's (--model-overrides "
                    "'{\"num_hidden_layers\": 2}' --steps 1600 for the same model)"]



def test_deberta_v3_recipe_is_rtd_with_gdes_on_deberta_v3s_encoder(caplog):
    from albert_keras.families import preset_config
    from albert_keras.models.deberta.family import DEBERTA_V3_ENCODER

    with caplog.at_level("WARNING", logger="albert_keras.training.recipes"):
        t = resolve_recipe(PipelineConfig(recipe="deberta_v3"), PretrainConfig())
    # measured: said when chosen
    assert "fine-tuned below --recipe small_corpus" in caplog.text
    # 1e-3: the rate its search found learning (1.6e-2, the small-corpus one, collapsed)
    assert t.learning_rate == 1e-3
    caplog.clear()
    with caplog.at_level("WARNING", logger="albert_keras.training.recipes"):
        own = resolve_recipe(PipelineConfig(recipe="deberta_v3"),
                             PretrainConfig(learning_rate=2e-3))
    assert "fine-tuned below" not in caplog.text and own.learning_rate == 2e-3
    assert (t.objective, t.embedding_sharing, t.mask_rate) == ("rtd", "gdes", 0.4)
    assert t.model_overrides == DEBERTA_V3_ENCODER
    config = preset_config("albert_tiny", **t.model_overrides)  # a valid encoder
    assert config.relative_attention and not config.position_biased_input
    assert config.sharing == "all"  # ALBERT's sharing of the preset stays
    # values given win over the recipe's
    mine = resolve_recipe(
        PipelineConfig(recipe="deberta_v3"),
        PretrainConfig(embedding_sharing="none", model_overrides={"position_buckets": 64},
                       enhanced_mask_decoder=True))
    assert mine.embedding_sharing == "none" and mine.model_overrides["position_buckets"] == 64
    assert mine.enhanced_mask_decoder
    for bad, words in ((dict(objective="mlm_sop"), "trains --objective rtd"),
                       (dict(init="runs/model"), "makes a new model")):
        with pytest.raises(ValueError, match=words):
            resolve_recipe(PipelineConfig(recipe="deberta_v3"), PretrainConfig(**bad))


@pytest.mark.sampled(keep=2, group="pretrain_cli_runs")  # CI: 2 of the pretraining command-line runs per commit
def test_a_modernbert_preset_trains_its_byte_level_bpe_and_learns(tmp_path):
    """``pretrain --preset modernbert_tiny`` on the built-in corpus: the
    family's tokenizer kind (byte-level BPE, what transformers reads as
    ModernBERT's), and a held-out masked LM above the most frequent token's."""
    import transformers

    from albert_keras.cli import main
    from albert_keras.text.registry import load_tokenizer

    out = tmp_path / "modernbert"
    assert main(["pretrain", "--preset", "modernbert_tiny", "--out", str(out), "--steps", "120",
                 "--vocab-size", "2000"]) == 0
    record = json.load(open(out / "tokenizer_kind.json"))
    assert record["kind"] == "bpe"
    ours = load_tokenizer(str(out / "tokenizer.json"))
    theirs = transformers.PreTrainedTokenizerFast(tokenizer_file=str(out / "tokenizer.json"))
    text = "The Congress shall have power to lay and collect taxes, naïve café 😀."
    assert theirs(text)["input_ids"][1:-1] == ours.encode([text])[0]
    metrics = json.load(open(out / "metrics.json"))
    # a model that learned nothing stays at the most frequent token's accuracy
    assert metrics["masked_lm_accuracy"] > metrics["most_frequent_token_accuracy"] + 0.03
