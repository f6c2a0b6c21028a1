"""Deprecated: import from arborgraph.core.model_files; this module goes in 0.3."""

from arborgraph.core.model_files import (  # noqa: F401
    MANIFEST_NAME,
    MODEL_FORMAT,
    PACKAGED_MODEL_NAME,
    FileEntry,
    ModelFilesError,
    ModelManifest,
    OnnxModelFiles,
    PipelineFacts,
    file_entry,
    file_sha256,
    load_onnx_model_dir,
    packaged_model_dir,
    packaged_tokenizer,
    read_manifest,
    verified_file,
)
from arborgraph.core.model_files import __all__  # noqa: F401
