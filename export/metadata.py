"""TFLite Model Metadata for app runtimes: MediaPipe Tasks and the Task Library.

MediaPipe's ``TextClassifier`` and ``TextEmbedder`` (Android, iOS, web and
Python, one C++ core) and the TFLite Task Library's ``BertNLClassifier`` and
``BertQuestionAnswerer`` tokenize in their own code and read everything else
from the metadata packed into the ``.tflite``: the three int32 inputs by the
names ``ids``, ``mask`` and ``segment_ids``, the tokenizer (input process unit
0: a WordPiece ``vocab.txt`` or a SentencePiece ``.model``, packed in the
file), a classifier's labels (a ``TENSOR_AXIS_LABELS`` file on its output),
and the model's name, description, version and author.

The metadata is a flatbuffer of MediaPipe's metadata schema, built here with
the schema's generated Python classes from the ``mediapipe`` wheel. Written by
hand rather than with a library writer because neither installs in working
order beside our pins: the wheel's own metadata writer imports a compiled
module the wheel does not ship (``mediapipe.tasks.cc``), and tflite-support
needs protobuf < 4. The packing follows the format both runtimes read: the
metadata buffer under the model's ``TFLITE_METADATA`` entry, the associated
files as a zip archive appended to the model.
"""

import dataclasses
import io
import zipfile

import flatbuffers
import numpy as np

from albert_keras.export.converter import ExportError
from albert_keras.export.export_config import arg

METADATA_NAME = "TFLITE_METADATA"
METADATA_IDENTIFIER = b"M001"
TFLITE_IDENTIFIER = b"TFL3"
LABELS_FILE = "labels.txt"
# The names MediaPipe's BERT preprocessor finds the inputs by.
INPUT_DESCRIPTIONS = {
    "ids": "Token ids of the input text: [CLS] pieces [SEP], then padding 0.",
    "mask": "1 for real tokens, 0 for padding.",
    "segment_ids": "0 for the first text (all 0 for one text).",
}


def metadata_schema():
    """MediaPipe's generated metadata-schema classes (one line when missing)."""
    try:
        from mediapipe.tasks.metadata import metadata_schema_py_generated
    except ImportError:
        raise ExportError(f"{arg('metadata')} writes MediaPipe's metadata schema: pip install "
                          "'albert-keras[mediapipe]'") from None
    return metadata_schema_py_generated


@dataclasses.dataclass
class ModelInfo:
    """What the metadata says about the model.

    Args:
        name: a short name.
        description: one or two sentences.
        version: the model's version.
        author: who made it.
        license: its license.
    """

    name: str
    description: str
    version: str
    author: str = "albert-keras"
    license: str = ""


def tokenizer_files(tokenizer):
    """``{file name: bytes}`` of the tokenizer as the runtimes read it: the
    SentencePiece model as it is, or a WordPiece vocabulary one piece a line."""
    try:
        return tokenizer.app_files()
    except ValueError as e:
        raise ExportError(f"{arg('metadata')}: {e}") from None


def _tokenizer_unit(fb, tokenizer, file_name):
    unit = fb.ProcessUnitT()
    # the metadata schema's two tokenizer forms (a kind names its own)
    if tokenizer.app_tokenizer == "SentencePieceTokenizerOptions":
        model = fb.AssociatedFileT()
        model.name, model.description = file_name, "The SentencePiece model."
        unit.optionsType = fb.ProcessUnitOptions.SentencePieceTokenizerOptions
        unit.options = fb.SentencePieceTokenizerOptionsT()
        unit.options.sentencePieceModel = [model]
    else:
        vocab = fb.AssociatedFileT()
        vocab.name, vocab.description = file_name, "The WordPiece vocabulary, one piece a line."
        vocab.type = fb.AssociatedFileType.VOCABULARY
        unit.optionsType = fb.ProcessUnitOptions.BertTokenizerOptions
        unit.options = fb.BertTokenizerOptionsT()
        unit.options.vocabFile = [vocab]
    return unit


def _tensor(fb, name, description, labels=False):
    tensor = fb.TensorMetadataT()
    tensor.name, tensor.description = name, description
    tensor.content = fb.ContentT()
    tensor.content.contentPropertiesType = fb.ContentProperties.FeatureProperties
    tensor.content.contentProperties = fb.FeaturePropertiesT()
    tensor.stats = fb.StatsT()
    if labels:
        label_file = fb.AssociatedFileT()
        label_file.name, label_file.description = LABELS_FILE, "The class of each score."
        label_file.type = fb.AssociatedFileType.TENSOR_AXIS_LABELS
        tensor.associatedFiles = [label_file]
    return tensor


def _min_parser_version(has_tokenizer, has_vocabulary):
    """The oldest metadata parser that reads every field written here.

    By the schema's own rules (MediaPipe's ``metadata_version.cc``): input
    process units and both tokenizer options came in 1.1.0, the VOCABULARY
    file type in 1.0.1; nothing else used here is newer than 1.0.0.
    """
    if has_tokenizer:
        return "1.1.0"
    return "1.0.1" if has_vocabulary else "1.0.0"


def build_metadata(info, inputs, outputs, tokenizer, output_descriptions, labels=None):
    """The metadata flatbuffer (bytes) for a model whose subgraph inputs and
    outputs are named ``inputs`` and ``outputs``, in the subgraph's order."""
    fb = metadata_schema()
    token_file = next(iter(tokenizer_files(tokenizer)))
    graph = fb.SubGraphMetadataT()
    graph.inputTensorMetadata = [_tensor(fb, n, INPUT_DESCRIPTIONS[n]) for n in inputs]
    graph.outputTensorMetadata = [
        _tensor(fb, n, output_descriptions[n], labels=bool(labels) and n == outputs[0])
        for n in outputs]
    graph.inputProcessUnits = [_tokenizer_unit(fb, tokenizer, token_file)]
    model = fb.ModelMetadataT()
    model.name, model.description, model.version = info.name, info.description, info.version
    model.author, model.license = info.author, info.license
    model.subgraphMetadata = [graph]
    model.minParserVersion = _min_parser_version(
        True, tokenizer.app_tokenizer == "BertTokenizerOptions")
    builder = flatbuffers.Builder(0)
    builder.Finish(model.Pack(builder), METADATA_IDENTIFIER)
    return bytes(builder.Output())


def signature_order(blob):
    """The signature names of the model's inputs and outputs, in the order of
    the subgraph's input and output tensors (the order metadata follows)."""
    from albert_keras.export.runtime import make_interpreter

    interpreter = make_interpreter(blob, 1)
    signatures = interpreter.get_signature_list()
    # The signature of subgraph 0, whose tensors the interpreter's input and
    # output details list: a file with one signature per length holds one
    # subgraph per signature, numbered in no set order, each numbering its
    # tensors from 0 (and a length's subgraph may hold more tensors than another).
    key = _first_subgraph_signature(blob) or next(iter(signatures))
    signature = signatures[key]
    runner = interpreter.get_signature_runner(key)
    by_index = {}
    for kind, details in (("inputs", runner.get_input_details()),
                          ("outputs", runner.get_output_details())):
        by_index[kind] = {d["index"]: name for name, d in details.items()}
    inputs = [by_index["inputs"][d["index"]] for d in interpreter.get_input_details()]
    outputs = [by_index["outputs"][d["index"]] for d in interpreter.get_output_details()]
    assert sorted(inputs) == sorted(signature["inputs"])
    return inputs, outputs


def _first_subgraph_signature(blob):
    """The key of the signature that runs subgraph 0, or None."""
    from ai_edge_litert import schema_py_generated as schema

    model = schema.Model.GetRootAs(blob, 0)
    for i in range(model.SignatureDefsLength()):
        signature = model.SignatureDefs(i)
        if signature.SubgraphIndex() == 0:
            return signature.SignatureKey().decode()
    return None


def pack(blob, metadata, files):
    """``blob`` with ``metadata`` under ``TFLITE_METADATA`` and ``files``
    appended as a zip archive, as the runtimes read them."""
    from ai_edge_litert import schema_py_generated as schema

    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(blob, 0))
    buffer = schema.BufferT()
    buffer.data = np.frombuffer(metadata, np.uint8)
    model.buffers = [*(model.buffers or []), buffer]
    entry = schema.MetadataT()
    entry.name, entry.buffer = METADATA_NAME, len(model.buffers) - 1
    model.metadata = [m for m in (model.metadata or []) if m.name != METADATA_NAME.encode()]
    model.metadata.append(entry)
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), TFLITE_IDENTIFIER)
    out = io.BytesIO(bytes(builder.Output()))
    out.seek(0, io.SEEK_END)
    with zipfile.ZipFile(out, "a") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def with_metadata(blob, info, tokenizer, output_descriptions, labels=None):
    """``blob`` with the metadata app runtimes need, and its packed files.

    Args:
        blob: the ``.tflite`` with the ids-in signature.
        info: a ``ModelInfo``.
        tokenizer: the host-side tokenizer the model was trained with.
        output_descriptions: ``{output name: description}``.
        labels: a classifier's class names, in output order.

    Example:
    >>> blob = with_metadata(blob, ModelInfo("century", "Dates a paragraph.", "1"),
    ...                      tokenizer, {"probability": "Class probabilities."},
    ...                      labels=["18", "19", "20", "21"])  # doctest: +SKIP
    """
    inputs, outputs = signature_order(blob)
    if sorted(inputs) != sorted(INPUT_DESCRIPTIONS):
        raise ExportError(f"{arg('metadata')} needs the inputs ids, mask and segment_ids; the model "
                          f"has {', '.join(inputs)}")
    files = dict(tokenizer_files(tokenizer))
    if labels:
        files[LABELS_FILE] = "".join(f"{label}\n" for label in labels).encode("utf-8")
    metadata = build_metadata(info, inputs, outputs, tokenizer, output_descriptions, labels)
    return pack(blob, metadata, files)


def read_metadata(blob):
    """``(ModelMetadataT, {packed file: bytes})`` of a ``.tflite`` written with
    metadata (``(None, {})`` without), as a runtime reads them.

    Example:
    >>> metadata, files = read_metadata(open("model.tflite", "rb").read())  # doctest: +SKIP
    """
    from ai_edge_litert import schema_py_generated as schema

    fb = metadata_schema()
    model = schema.Model.GetRootAs(blob, 0)
    for i in range(model.MetadataLength()):
        entry = model.Metadata(i)
        if entry.Name() == METADATA_NAME.encode():
            data = model.Buffers(entry.Buffer()).DataAsNumpy().tobytes()
            metadata = fb.ModelMetadataT.InitFromObj(fb.ModelMetadata.GetRootAs(data, 0))
            with zipfile.ZipFile(io.BytesIO(blob)) as archive:
                files = {name: archive.read(name) for name in archive.namelist()}
            return metadata, files
    return None, {}
