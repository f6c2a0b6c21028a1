"""Loading one file's bytes without letting a parser's failure escape."""

from __future__ import annotations

from ingest.errors import SkipFile
from ingest.loaders import Format, load_document
from ingest.models import Document, SkippedFile

_FORMAT_NAMES = {"markdown": "Markdown", "html": "HTML", "text": "text", "rst": "reStructuredText", "pdf": "PDF"}


def load_or_skip(raw: bytes, *, doc_id: str, path: str, fmt: Format) -> Document | SkippedFile:
    """Run the loader for ``fmt``; turn any failure into a ``SkippedFile`` with a reason."""
    try:
        return load_document(raw, doc_id=doc_id, path=path, fmt=fmt)
    except SkipFile as exc:
        return SkippedFile(path=path, reason=exc.reason)
    except RecursionError:
        return SkippedFile(path=path, reason=f"malformed {_FORMAT_NAMES[fmt]}: nesting too deep to parse")
    except MemoryError:
        return SkippedFile(path=path, reason=f"malformed {_FORMAT_NAMES[fmt]}: parser ran out of memory")
    except Exception as exc:  # noqa: BLE001 - any parser failure is a property of the file
        detail = " ".join(str(exc).split())[:200]
        return SkippedFile(
            path=path, reason=f"malformed {_FORMAT_NAMES[fmt]}: {type(exc).__name__}" + (f": {detail}" if detail else "")
        )
