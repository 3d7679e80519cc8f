"""Where a model comes from: our model folders and ``.keras`` files, HF, TF1
and keras-hub checkpoint folders, and preset names.

``layout`` names the files of our folders, ``registry`` the reader of each
kind of source, ``model_source.ModelSource`` is a source resolved once, and
``folder_writing`` writes our folders. ``Backbone.from_preset`` and
``Tokenizer.from_preset`` ask the registry, which names its readers, so the
model and text floors below import none of this package's readers.
"""
