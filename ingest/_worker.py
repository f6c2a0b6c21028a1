"""The loader worker process behind ``ingest.sandbox`` (run as ``python -m ingest._worker``).

Reads requests (a JSON header frame, then the file's bytes) from stdin and answers
each with one JSON frame: ``{"document": ...}`` or ``{"skipped": reason}``.
"""

from __future__ import annotations

import json
import os
import sys

# Enough for any sane document of the size ingestion accepts; a parser that blows
# up on malformed input gets a MemoryError instead of taking the machine down.
MEMORY_LIMIT_BYTES = 4 * 2**30


def main() -> int:
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not corrupt the protocol
    protocol_in = os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    try:
        import resource  # POSIX only

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    except (ImportError, ValueError, OSError):
        pass
    from ingest.loaders import get_loader
    from ingest.models import Document
    from ingest.safe_load import load_or_skip
    from ingest.sandbox import read_frame, write_frame

    for fmt in ("markdown", "html", "text", "rst", "pdf"):
        get_loader(fmt)  # import every parser now, outside the per-file time limit
    write_frame(protocol_out, b"ready")
    while True:
        header = read_frame(protocol_in)
        raw = read_frame(protocol_in) if header is not None else None
        if header is None or raw is None:
            return 0
        request = json.loads(header)
        result = load_or_skip(raw, doc_id=request["doc_id"], path=request["path"], fmt=request["fmt"])
        if isinstance(result, Document):
            reply = {"document": result.model_dump(mode="json")}
        else:
            reply = {"skipped": result.reason}
        write_frame(protocol_out, json.dumps(reply).encode())


if __name__ == "__main__":
    sys.exit(main())
