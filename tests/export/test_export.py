"""Export: every quantization mode validates on a small trained model,
string-in equals ids-in, unsafe or failing conversions are caught, and
nothing is left behind on failure."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter

from albert_keras.export import ExportConfig
from albert_keras.export import ExportError
from albert_keras.export import ValidationError
from albert_keras.export import export_tflite
from albert_keras.export.bench import bench
from albert_keras.export.converter import convert
from albert_keras.export.converter import prepare_for_export
from albert_keras.export.converter import serving_function
from albert_keras.export.int8 import Int8Recipe
from albert_keras.export.runtime import TFLiteRunner
from albert_keras.export.validation import validate
from albert_keras.saving import load_model
from tests.helpers import albert_config

QUIET = dict(examples=16)


@pytest.mark.parametrize("quantize", ["none", "float16", "dynamic", "int8", "int4"])
@pytest.mark.sampled(keep=3)  # CI: 3 of these sets per commit
def test_each_mode_validates(classifier_folder, tmp_path, quantize):
    out = str(tmp_path / f"{quantize}.tflite")
    sidecar = export_tflite(classifier_folder, out, ExportConfig(quantize=quantize, **QUIET))
    assert os.path.isfile(out)
    on_disk = json.load(open(out[:-len(".tflite")] + ".json"))
    assert on_disk == sidecar
    assert sidecar["labels"] == ["dog", "fox"] and sidecar["sequence_length"] == 32
    # in the file's tensor order, as LiteRT lists them (an app binding by
    # position feeds the wrong tensors otherwise)
    listed = [d["name"] for d in Interpreter(model_path=out).get_input_details()]
    assert listed == [f"serving_default_{name}:0" for name in sidecar["inputs"]]
    assert sorted(sidecar["inputs"]) == ["ids", "mask", "segment_ids"]
    assert sidecar["special_ids"] == {"pad": 0, "unk": 1, "cls": 2, "sep": 3, "mask": 4}
    assert sidecar["cls_only"] is True  # a classifier reads the [CLS] row alone
    report = sidecar["validation"]
    assert report["passed"] and report["data"].endswith("cls_eval.csv")
    logits = report["outputs"]["logits"]
    if quantize == "none":
        assert logits["max_abs_diff"] <= 1e-4
    if quantize == "float16":
        assert logits["max_abs_diff"] <= 1e-2
    assert logits["top1_agreement"] >= 0.9
    assert report["tflite_accuracy"] == pytest.approx(report["keras_accuracy"], abs=0.1)
    runner = TFLiteRunner(out)
    assert runner.input_names == ["ids", "mask", "segment_ids"]
    assert runner.output_names == ["logits"]


def test_int4_stores_dense_weights_and_word_table_in_four_bits(tmp_path):
    """int4: every dense kernel and the word table are INT4 tensors in the
    file (the table read by an EMBEDDING_LOOKUP, one block per row), and the
    file is at most 60% of dynamic int8's."""
    from albert_keras import AlbertConfig
    from albert_keras import AlbertEncoder
    from albert_keras import SequenceClassifier

    keras.utils.set_random_seed(0)
    config = AlbertConfig(vocab_size=2000, embedding_size=64, hidden_size=128,
                          num_hidden_layers=2, num_attention_heads=2, intermediate_size=512,
                          max_position_embeddings=32)
    model = prepare_for_export(SequenceClassifier(AlbertEncoder(config), 3))
    dynamic = convert(model, serving_function(model, 16), "dynamic")
    feed = {"ids": np.arange(5, 21, dtype=np.int32)[None], "mask": np.ones((1, 16), np.int32),
            "segment_ids": np.zeros((1, 16), np.int32)}
    expected = serving_function(model, 16)(**feed)["logits"].numpy()
    blob = convert(model, serving_function(model, 16), "int4")
    assert len(blob) <= 0.6 * len(dynamic)
    # The interpreter reports 4-bit tensors as int8: read the types from the
    # flatbuffer itself.
    from ai_edge_litert import schema_py_generated as schema

    graph = schema.ModelT.InitFromObj(schema.Model.GetRootAs(blob, 0))
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in graph.operatorCodes]
    ops = graph.subgraphs[0].operators
    tensors = graph.subgraphs[0].tensors
    fc = [tensors[op.inputs[1]] for op in ops
          if codes[op.opcodeIndex] == schema.BuiltinOperator.FULLY_CONNECTED]
    assert len(fc) >= 6 and all(t.type == schema.TensorType.INT4 for t in fc)
    tables = [tensors[op.inputs[1]] for op in ops
              if codes[op.opcodeIndex] == schema.BuiltinOperator.EMBEDDING_LOOKUP]
    assert [(list(t.shape), t.type) for t in tables] == [([2000, 64], schema.TensorType.INT4)]
    assert tables[0].quantization.details.blockSize == 64  # one scale per row
    assert all(t.quantization.details.blockSize == 32 for t in fc)
    got = TFLiteRunner(blob)(feed)["logits"]
    np.testing.assert_allclose(got, expected, atol=0.05)


def test_int4_keeps_a_tied_word_table_whole(tmp_path):
    """The MLM model's word table is also its decoder's matrix: the rewrite
    leaves that GATHER alone (one tensor cannot take two encodings), and the
    export still matches Keras."""
    from albert_keras import AlbertConfig
    from albert_keras import AlbertEncoder
    from albert_keras import EncoderPretrainer
    from albert_keras.export.converter import _word_tables_as_embedding_lookups

    keras.utils.set_random_seed(0)
    config = AlbertConfig(vocab_size=300, embedding_size=32, hidden_size=64,
                          num_hidden_layers=1, num_attention_heads=2, intermediate_size=128,
                          max_position_embeddings=32)
    model = prepare_for_export(EncoderPretrainer(AlbertEncoder(config)))
    serve = serving_function(model, 16, max_predictions=4)
    blob = convert(model, serve, "none")
    assert _word_tables_as_embedding_lookups(blob) == (blob, set())
    feed = {"ids": np.arange(5, 21, dtype=np.int32)[None], "mask": np.ones((1, 16), np.int32),
            "segment_ids": np.zeros((1, 16), np.int32),
            "masked_positions": np.array([[1, 2, 3, 4]], np.int32)}
    expected = serve(**feed)["mlm_logits"].numpy()
    got = TFLiteRunner(convert(model, serve, "int4"))(feed)["mlm_logits"]
    np.testing.assert_allclose(got, expected, atol=0.1)


@pytest.mark.parametrize("quantize", ["none", "dynamic"])
def test_alibi_model_exports_and_matches_keras(quantize):
    """The ALiBi penalty is built from the input length in the graph, so
    the exported model follows Keras at every length up to its own."""
    from albert_keras import AlbertConfig
    from albert_keras import AlbertEncoder
    from albert_keras import SequenceClassifier

    keras.utils.set_random_seed(0)
    config = AlbertConfig(vocab_size=300, embedding_size=32, hidden_size=64,
                          num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                          max_position_embeddings=32, position_bias="alibi")
    model = prepare_for_export(SequenceClassifier(AlbertEncoder(config), 3))
    assert model.encoder.config.position_bias == "alibi"
    serve = serving_function(model, 16)
    runner = TFLiteRunner(convert(model, serve, quantize))
    rng = np.random.default_rng(0)
    for real in (16, 9):
        mask = (np.arange(16) < real).astype(np.int32)[None]
        feed = {"ids": rng.integers(5, 300, (1, 16)).astype(np.int32) * mask, "mask": mask,
                "segment_ids": np.zeros((1, 16), np.int32)}
        expected = serve(**feed)["logits"].numpy()
        np.testing.assert_allclose(runner(feed)["logits"], expected,
                                   atol=1e-4 if quantize == "none" else 0.05)


def test_shared_weights_are_stored_once(tmp_path):
    """All-shared ALBERT: going from 2 to 8 layers adds op records to the
    file, but not one more copy of the shared layer's weights (the failure
    of onnxruntime#11701)."""
    from albert_keras import AlbertConfig
    from albert_keras import AlbertEncoder

    sizes = []
    for layers in (2, 8):
        config = AlbertConfig(vocab_size=100, embedding_size=16, hidden_size=128,
                              num_hidden_layers=layers, num_attention_heads=2,
                              intermediate_size=512, max_position_embeddings=32)
        encoder = prepare_for_export(AlbertEncoder(config))
        for quantize in ("none", "dynamic"):
            blob = convert(encoder, serving_function(encoder, 16), quantize)
            sizes.append(len(blob))
    none_2, dynamic_2, none_8, dynamic_8 = sizes
    layer_params = sum(int(np.prod(w.shape)) for w in encoder.transformer.weights)
    assert layer_params > 190_000
    assert none_8 - none_2 < 0.5 * 4 * layer_params  # float32: 4 bytes a weight
    assert dynamic_8 - dynamic_2 < 0.5 * 1 * layer_params  # int8: 1 byte


def test_string_in_equals_ids_in(classifier_folder, tmp_path, task_files):
    from albert_keras.text.packer import pack_texts
    from albert_keras.text.sentencepiece_tokenizer import SentencePiece

    ids_out = str(tmp_path / "ids.tflite")
    str_out = str(tmp_path / "str.tflite")
    export_tflite(classifier_folder, ids_out, ExportConfig(**QUIET))
    sidecar = export_tflite(classifier_folder, str_out, ExportConfig(with_tokenizer=True, **QUIET))
    assert sidecar["inputs"] == ["text"] and sidecar["validation"]["passed"]
    texts = ["fox the quick brown fox jumps", "dog café naïve 😀", "x",
             "a " * 100]  # the last one is truncated
    packed = pack_texts(SentencePiece(os.path.join(classifier_folder, "spm.model")), texts,
                        None, 32)
    by_ids, by_text = TFLiteRunner(ids_out), TFLiteRunner(str_out)
    for i, text in enumerate(texts):
        a = by_ids({"ids": packed["token_ids"][i:i + 1], "mask": packed["padding_mask"][i:i + 1],
                    "segment_ids": packed["segment_ids"][i:i + 1]})["logits"]
        b = by_text({"text": text})["logits"]
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_unsafe_conversion_path_is_caught(classifier_folder):
    """A known trap: from_concrete_functions with trackable_obj gives NaN
    without an error; validation must refuse it."""
    model = prepare_for_export(load_model(os.path.join(classifier_folder, "model.keras")))
    serve = serving_function(model, 32)
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [serve.get_concrete_function()], trackable_obj=model)
    blob = converter.convert()
    rng = np.random.default_rng(0)
    feeds = [{"ids": rng.integers(5, 60, (1, 32)).astype("int32"),
              "mask": np.ones((1, 32), "int32"), "segment_ids": np.zeros((1, 32), "int32")}
             for _ in range(4)]
    expected = [{"logits": serve(**f)["logits"].numpy()} for f in feeds]
    with pytest.raises(ValidationError, match="logits"):
        validate(blob, feeds, expected, "none")
    # The same model on the safe path passes.
    assert validate(convert(model, serve, "none"), feeds, expected, "none")["passed"]


def test_a_failed_validation_writes_nothing(classifier_folder, tmp_path):
    out = str(tmp_path / "bad.tflite")
    with pytest.raises(ValidationError) as info:
        export_tflite(classifier_folder, out,
                      ExportConfig(quantize="float16", tolerance=1e-12, **QUIET))
    assert "max |diff|" in str(info.value)
    assert not info.value.report["passed"]
    assert os.listdir(tmp_path) == []


def test_flex_ops_are_refused():
    """A graph that needs TensorFlow ops outside the builtins is refused."""
    import keras

    model = keras.Sequential([keras.layers.Dense(2)])
    model.build((None, 3))

    @tf.function(input_signature=[tf.TensorSpec([1, 3], tf.float32, name="x")])
    def serve(x):
        # A string op has no TFLite builtin kernel.
        text = tf.strings.as_string(x)
        return {"y": model(x), "n": tf.strings.length(text)}

    with pytest.raises(ExportError, match="Flex|builtins|conversion failed"):
        convert(model, serve, "none")


def test_int8_needs_real_data_and_existing_outputs_are_kept(classifier_folder, tmp_path,
                                                            init_folder):
    with pytest.raises(ExportError, match="representative"):
        export_tflite(init_folder, str(tmp_path / "enc.tflite"), ExportConfig(quantize="int8", sequence_length=16, **QUIET))
    out = tmp_path / "m.tflite"
    out.write_bytes(b"keep")
    with pytest.raises(FileExistsError):
        export_tflite(classifier_folder, str(out), ExportConfig(**QUIET))
    assert out.read_bytes() == b"keep"


def test_encoder_from_a_pretraining_folder_and_bench(init_folder, tmp_path):
    out = str(tmp_path / "encoder.tflite")
    sidecar = export_tflite(init_folder, out, ExportConfig(sequence_length=16, **QUIET))
    assert sidecar["kind"] == "encoder"
    # in the file's output tensor order, as LiteRT lists them
    interpreter = Interpreter(model_path=out)
    named = {d["index"]: name for name, d in
             interpreter.get_signature_runner().get_output_details().items()}
    assert sidecar["outputs"] == [named[d["index"]] for d in interpreter.get_output_details()]
    assert sorted(sidecar["outputs"]) == ["pooled_output", "sequence_output"]
    assert sidecar["validation"]["data"].startswith("random ids")
    result = bench(out, runs=5, threads=1, warmup=1)
    assert result["size_mb"] > 0 and result["median_ms"] > 0 and result["peak_rss_mb"] > 0


@pytest.mark.parametrize("scope", ["dense", "all"])
def test_int8_scope_picks_the_ops_that_stay_float(classifier_folder, tmp_path, scope):
    """``dense``: only the matmuls of the dense layers in int8; ``all``: the
    converter's full int8. Both validate, string in included."""
    out = str(tmp_path / f"{scope}.tflite")
    sidecar = export_tflite(classifier_folder, out, ExportConfig(
        quantize="int8", int8_scope=scope, with_tokenizer=True, **QUIET))
    report = sidecar["validation"]
    assert report["passed"]
    float_ops = report["float_ops"]
    assert "FULLY_CONNECTED" not in float_ops  # int8 in both scopes
    if scope == "dense":
        for op in ("SOFTMAX", "BATCH_MATMUL", "RSQRT", "GELU"):
            assert float_ops.get(op, 0) > 0, (op, float_ops)
    else:
        for op in ("SOFTMAX", "BATCH_MATMUL"):
            assert op not in float_ops, (op, float_ops)
    # string in: the tokenizer runs inside the quantized graph
    runner = TFLiteRunner(out)
    assert runner.input_names == ["text"]


def test_int8_scope_is_checked(classifier_folder, tmp_path):
    with pytest.raises(ExportError, match="int8_scope"):
        convert(None, None, "int8", representative=[{}], int8=Int8Recipe(scope="most"))


def test_qat_validates_and_matches_post_training_int8(classifier_folder, tmp_path):
    ptq = export_tflite(classifier_folder, str(tmp_path / "ptq.tflite"), ExportConfig(quantize="int8", **QUIET))
    qat = export_tflite(classifier_folder, str(tmp_path / "qat.tflite"), ExportConfig(quantize="qat", qat_epochs=2, qat_learning_rate=1e-4, **QUIET))
    assert qat["validation"]["passed"] and qat["quantize"] == "qat"
    # The dense layers' scope, as post-training int8: the ops without fast
    # int8 kernels stay float (all in int8, QAT's file ran 12x slower than
    # post-training int8's on a CPU, and 2.6x slower on this tiny model)
    kept = {"SOFTMAX", "BATCH_MATMUL", "RSQRT"}  # no fast int8 kernels: float in both
    assert kept <= qat["validation"]["float_ops"].keys() & ptq["validation"]["float_ops"].keys()
    assert qat["size_bytes"] < 1.1 * ptq["size_bytes"]  # int8 weights, as post-training
    assert qat["validation"]["tflite_accuracy"] >= ptq["validation"]["tflite_accuracy"]


def test_qat_copy_keeps_the_float_model_outputs_close(classifier_folder):
    from albert_keras.export.qat import quantization_aware_copy
    from albert_keras.layers.quantized_dense import QuantizedDense

    model = load_model(os.path.join(classifier_folder, "model.keras"))
    qat = quantization_aware_copy(model)
    quantized = [layer for layer in qat._flatten_layers() if isinstance(layer, QuantizedDense)]
    assert len(quantized) >= 8  # q, k, v, output, ffn, ffn_output, projection, pooler, head
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(5, 60, (8, 32)).astype("int32"),
         "segment_ids": np.zeros((8, 32), "int32"), "padding_mask": np.ones((8, 32), "int32")}
    qat(x, training=True)  # observe ranges once (dropout aside, as in QAT)
    a = model.predict(x, verbose=0)["logits"]
    b = qat.predict(x, verbose=0)["logits"]
    assert np.mean(np.argmax(a, -1) == np.argmax(b, -1)) >= 0.75


def test_embedder_keras_file_string_in(init_folder, tmp_path):
    from albert_keras.models.task_models.sentence_embedder import SentenceEmbedder
    from albert_keras.sources.model_source import ModelSource

    model = SentenceEmbedder(ModelSource(init_folder).encoder(dtype="float32"), layers=(-2, -1),
                           normalize=True)
    path = str(tmp_path / "embedder.keras")
    model.save(path)
    texts = tmp_path / "texts.txt"
    texts.write_text("the quick brown fox\ncafé naïve 😀\na lazy dog\n", encoding="utf-8")
    out = str(tmp_path / "embedder.tflite")
    sidecar = export_tflite(path, out, ExportConfig(with_tokenizer=True, sequence_length=16, validation_data=str(texts), tokenizer=os.path.join(init_folder, "spm.model"), **QUIET))
    assert sidecar["kind"] == "embedder" and sidecar["outputs"] == ["embeddings"]
    assert sidecar["validation"]["examples"] == 3
    vector = TFLiteRunner(out)({"text": "the quick brown fox"})["embeddings"]
    assert vector.shape == (1, 64)
    np.testing.assert_allclose(np.linalg.norm(vector), 1.0, atol=1e-5)


@pytest.mark.parametrize("head", ["classifier", "choice", "pooled", "tagger", "mean",
                                  "mean_classifier", "both_classifier"])
@pytest.mark.sampled(keep=4)  # CI: 4 of these sets per commit
def test_pooled_heads_export_only_the_cls_row_of_the_last_block(head):
    """Classifier, multiple-choice and pooled-embedding exports compute only
    the [CLS] row in the last block (a tagger or a mean-pooled embedder needs
    every row); the TFLite file still equals the full Keras model."""
    from albert_keras import AlbertConfig
    from albert_keras import AlbertEncoder
    from albert_keras import ChoiceScorer
    from albert_keras import SentenceEmbedder
    from albert_keras import SequenceClassifier
    from albert_keras import TokenTagger

    keras.utils.set_random_seed(0)
    config = AlbertConfig(vocab_size=300, embedding_size=32, hidden_size=64,
                          num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                          max_position_embeddings=32)
    model = {"classifier": lambda e: SequenceClassifier(e, 3),
             "mean_classifier": lambda e: SequenceClassifier(e, 3, pooling="mean"),
             "both_classifier": lambda e: SequenceClassifier(e, 3, pooling="both"),
             "choice": ChoiceScorer,
             "tagger": lambda e: TokenTagger(e, 5),
             "pooled": lambda e: SentenceEmbedder(e, pooling="pooled"),
             "mean": SentenceEmbedder}[head](AlbertEncoder(config))
    output = "embeddings" if head in ("pooled", "mean") else "logits"
    exported = prepare_for_export(model)
    assert exported.encoder.cls_only is (head in ("classifier", "choice", "pooled"))
    rng = np.random.default_rng(0)
    shape = (1, 2, 16) if head == "choice" else (1, 16)
    mask = np.ones(shape, np.int32)
    mask[..., 11:] = 0
    feed = {"ids": rng.integers(5, 300, shape).astype(np.int32) * mask, "mask": mask,
            "segment_ids": np.zeros(shape, np.int32)}
    expected = model({"token_ids": feed["ids"], "padding_mask": mask,
                      "segment_ids": feed["segment_ids"]})[output].numpy()
    blob = convert(exported, serving_function(exported, 16, num_choices=2), "none")
    np.testing.assert_allclose(TFLiteRunner(blob)(feed)[output], expected, atol=1e-4)


def _deberta_v3_config(**changes):

    return albert_config(**{**dict(
        vocab_size=300, embedding_size=32, hidden_size=64, num_hidden_layers=3,
        num_attention_heads=4, intermediate_size=128, max_position_embeddings=64,
        relative_attention=True, position_buckets=8, share_att_key=True,
        norm_rel_ebd="layer_norm", position_biased_input=False, type_vocab_size=0,
        pooler_hidden_act="gelu", hidden_act="gelu"), **changes})


@pytest.mark.parametrize("quantize", ["none", "float16", "dynamic"])
@pytest.mark.parametrize("layout", ["albert_shared", "deberta_v2"])
@pytest.mark.sampled(keep=3)  # CI: 3 of these sets per commit
def test_deberta_models_export_and_match_keras(quantize, layout):
    """Disentangled attention (relative index, gathers, both terms) converts
    to TFLite builtins and follows Keras at two lengths. ``albert_shared``:
    one shared block with a factorized embedding; ``deberta_v2``: own
    position projections, absolute positions and segments."""
    from albert_keras import AlbertEncoder
    from albert_keras import SequenceClassifier

    keras.utils.set_random_seed(0)
    config = _deberta_v3_config() if layout == "albert_shared" else _deberta_v3_config(
        embedding_size=64, num_hidden_groups=3, sharing="none", share_att_key=False,
        position_biased_input=True, type_vocab_size=2, norm_rel_ebd="none")
    model = prepare_for_export(SequenceClassifier(AlbertEncoder(config), 3))
    serve = serving_function(model, 24)
    runner = TFLiteRunner(convert(model, serve, quantize))
    rng = np.random.default_rng(0)
    for real in (24, 11):  # 24 reaches the log buckets (beyond 8 // 2)
        mask = (np.arange(24) < real).astype(np.int32)[None]
        feed = {"ids": rng.integers(5, 300, (1, 24)).astype(np.int32) * mask, "mask": mask,
                "segment_ids": (np.arange(24) >= 12).astype(np.int32)[None] * mask}
        expected = serve(**feed)["logits"].numpy()
        np.testing.assert_allclose(runner(feed)["logits"], expected,
                                   atol={"none": 1e-4, "float16": 1e-2}.get(quantize, 0.05))


@pytest.fixture(scope="module")
def deberta_classifier_folder(task_files, tmp_path_factory):
    """An ALBERT-shared DeBERTa encoder (with its tokenizer beside it),
    fine-tuned on the tiny classification task."""
    from albert_keras import AlbertEncoder
    from albert_keras.drivers.finetune import finetune
    from albert_keras.tasks.finetune_config import FinetuneConfig
    from albert_keras.text.spm_trainer import train_sentencepiece
    from tests.helpers import make_sentences

    folder = tmp_path_factory.mktemp("deberta")
    keras.utils.set_random_seed(0)
    AlbertEncoder(_deberta_v3_config()).save(folder / "init.keras")
    train_sentencepiece(make_sentences(2000), str(folder / "spm.model"), vocab_size=300)
    out = str(folder / "cls")
    finetune(str(folder / "init.keras"), task_files["cls_train"], task_files["cls_eval"], out,
             FinetuneConfig(task="classify", epochs=3, batch_size=8, sequence_length=32,
                            learning_rate=1e-3))
    return out


@pytest.mark.parametrize("quantize", ["int8", "int4"])
def test_a_fine_tuned_deberta_classifier_validates_in_integer_modes(deberta_classifier_folder,
                                                                      tmp_path, quantize):
    """Full-integer and int4 exports of the DeBERTa classifier each pass the
    export's validation against Keras on the eval rows."""
    sidecar = export_tflite(deberta_classifier_folder, str(tmp_path / f"{quantize}.tflite"),
                            ExportConfig(quantize=quantize, **QUIET))
    report = sidecar["validation"]
    assert report["passed"] and report["outputs"]["logits"]["top1_agreement"] >= 0.9


@pytest.fixture(scope="module")
def mobilebert_qat_folder(task_files, tmp_path_factory):
    """A small MobileBERT in the quantization-aware form (``mobilebert_qat``:
    relu6, NoNorm), with its tokenizer, fine-tuned on the tiny task."""
    from albert_keras import MobileBertConfig
    from albert_keras import MobileBertEncoder
    from albert_keras.drivers.finetune import finetune
    from albert_keras.presets import get_preset
    from albert_keras.tasks.finetune_config import FinetuneConfig
    from albert_keras.text.spm_trainer import train_sentencepiece
    from tests.helpers import MOBILEBERT
    from tests.helpers import make_sentences

    folder = tmp_path_factory.mktemp("mobilebert_qat")
    keras.utils.set_random_seed(0)
    form = {k: getattr(get_preset("mobilebert_qat"), k) for k in ("hidden_act",
                                                                   "normalization_type")}
    assert form == {"hidden_act": "relu6", "normalization_type": "no_norm"}
    MobileBertEncoder(MobileBertConfig(**{**MOBILEBERT, **form, "vocab_size": 300})).save(
        folder / "init.keras")
    train_sentencepiece(make_sentences(2000), str(folder / "spm.model"), vocab_size=300)
    out = str(folder / "cls")
    metrics = finetune(str(folder / "init.keras"), task_files["cls_train"],
                       task_files["cls_eval"], out,
                       FinetuneConfig(task="classify", epochs=8, batch_size=8,
                                      sequence_length=32, learning_rate=2e-3))
    assert metrics["accuracy"] > 0.6, metrics  # learned, or the export checks mean little
    return out


def test_mobilebert_trains_quantization_aware_and_exports_in_int8(mobilebert_qat_folder,
                                                                 tmp_path):
    """MobileBERT's quantization-aware form: every dense layer fake-quantizes
    in the QAT copy, and the exported file runs its matmuls in int8 and
    agrees with Keras, as post-training int8 does."""
    from albert_keras.export.qat import quantization_aware_copy
    from albert_keras.layers.quantized_dense import QuantizedDense

    model = load_model(os.path.join(mobilebert_qat_folder, "model.keras"))
    dense = [layer for layer in model._flatten_layers() if isinstance(layer, keras.layers.Dense)]
    copy = quantization_aware_copy(model)
    quantized = [layer for layer in copy._flatten_layers() if isinstance(layer, QuantizedDense)]
    # every dense layer but the task head's (the head stays float, as in ALBERT's copy)
    assert len(quantized) >= len(dense) - 1 >= 3 * 8
    ptq = export_tflite(mobilebert_qat_folder, str(tmp_path / "ptq.tflite"),
                        ExportConfig(quantize="int8", **QUIET))
    # int8_scope all: the integer-only form MobileBERT-EdgeTPU's QAT is for
    # (the default dense scope keeps CPU-slow int8 ops in float, as int8 does)
    qat = export_tflite(mobilebert_qat_folder, str(tmp_path / "qat.tflite"),
                        ExportConfig(quantize="qat", qat_epochs=2, qat_learning_rate=1e-4,
                                     int8_scope="all", **QUIET))
    assert ptq["validation"]["passed"] and qat["validation"]["passed"]
    assert qat["validation"]["outputs"]["logits"]["top1_agreement"] >= 0.9
    # the fake-quant ranges put attention in int8 too: measured, the float
    # ops left were 12 ADD and 25 QUANTIZE (post-training int8's dense scope
    # also keeps BATCH_MATMUL, SOFTMAX and the NoNorms' MUL in float)
    float_ops = qat["validation"]["float_ops"]
    assert not {"FULLY_CONNECTED", "BATCH_MATMUL", "SOFTMAX"} & set(float_ops), float_ops
    assert sum(float_ops.values()) < sum(ptq["validation"]["float_ops"].values())
    assert qat["size_bytes"] < 1.1 * ptq["size_bytes"]


def test_a_mobilebert_classifier_exports_string_in(mobilebert_qat_folder, tmp_path):
    """Raw strings in, MobileBERT's scores out: the tokenizer runs inside the
    file, and the export's validation (against Keras on the eval rows) passes."""
    out = str(tmp_path / "text.tflite")
    sidecar = export_tflite(mobilebert_qat_folder, out,
                            ExportConfig(with_tokenizer=True, **QUIET))
    assert sidecar["validation"]["passed"]
    assert sidecar["validation"]["outputs"]["logits"]["top1_agreement"] == 1.0
    assert TFLiteRunner(out).input_names == ["text"]
