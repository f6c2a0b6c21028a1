"""One hierarchy for every error Arborgraph raises on purpose.

:class:`UserError` is what a caller can fix (a wrong path, option, question or file, an
index that is missing, damaged or busy): its message is one line, and the CLI prints it
and exits with status 2, without a traceback, in one place. :class:`ExternalError` is a
service that failed after its retries (an LLM endpoint, a graph server's protocol): the
CLI says so and exits 1. Everything else is a bug and keeps its traceback.

The classes keep the built-in bases they always had (``QueryError`` is a ``ValueError``,
``LLMError`` a ``RuntimeError``...), so ``except ValueError`` in callers still works.
"""

from __future__ import annotations


class ArborgraphError(Exception):
    """The base of every error Arborgraph raises on purpose."""


class UserError(ArborgraphError):
    """Something the caller got wrong and can fix; the message is one clear line."""


class ExternalError(ArborgraphError):
    """A service Arborgraph depends on failed (after retries); not the caller's input."""


# -- user errors ------------------------------------------------------------------------


class ConfigError(UserError, ValueError):
    """A configuration file or value a user got wrong; the message says which."""


class QueryError(UserError, ValueError):
    """A query the index cannot answer as asked (e.g. a route it has not built)."""


class EmbedderMismatch(QueryError):
    """An index whose vectors came from another embedder than the one that would embed the
    question (another model, model file or pipeline): comparing the two would rank noise.
    The message names both and says to rebuild the index."""


class GraphBackendError(QueryError):
    """The graph server cannot answer (unreachable, refused, or not holding this
    index's graph); the message is one line for the user."""


class BuildError(UserError):
    """A build that cannot proceed because of its input; the message says why."""


class NoUsableDocuments(BuildError):
    """A build whose inputs hold no document that can be indexed."""


class IndexUnusable(UserError):
    """An index directory that cannot be opened or written; the message is one clear line.

    The base of :class:`IndexNotFound` and :class:`IndexDamaged`: catch this for both.
    """


class IndexNotFound(IndexUnusable):
    """No index at the path: it does not exist, is not a directory, or has no CURRENT."""


class IndexDamaged(IndexUnusable):
    """An index that is there but cannot be used: missing, truncated or tampered files,
    an unreadable manifest, another schema version."""


class IndexBusy(IndexUnusable):
    """Another build holds the index's build lock."""


class ExecutorError(UserError, ValueError):
    """An executor spec a user got wrong, or a cluster that cannot be reached."""


class EvalError(UserError, ValueError):
    """A question file or evaluation request that cannot be used."""


class ExportError(UserError):
    """An export that cannot proceed; the message is one line for the user."""


# -- external failures ------------------------------------------------------------------


class LLMError(ExternalError, RuntimeError):
    """A model call failed after its retries; the message names the item."""


class UnusableReply(LLMError):
    """The model answered, but no reply for the item was usable after the repair rounds
    (not JSON valid against the schema, or failing the item's own checks). A build stage
    may put its no-LLM result for that item in its place; a failed call (transport,
    timeout, server error) is an ``LLMError`` of another kind and is never replaced."""


class MalformedReply(ExternalError, ValueError):
    """A reply that is not JSON valid against the requested schema."""


class EmbedderUnavailable(ExternalError, RuntimeError):
    """The embedding model could not be loaded; callers fall back to lexical retrieval."""


class ModelFilesError(EmbedderUnavailable):
    """An ONNX model directory is incomplete, altered or has no readable manifest."""


# -- neither: the caller stopped waiting ------------------------------------------------


class Cancelled(ArborgraphError, TimeoutError):
    """Work stopped at one of its checkpoints because its caller gave up on it (a
    service request past its time limit): nobody is waiting for its result."""


class StorageError(ExternalError, OSError):
    """The disk refused a write (full, read-only, an I/O error): nothing half-written is
    left live; the message says which path and why, in one line."""


def install_hint(extra: str) -> str:
    """How to install an optional extra. Arborgraph is installed from its checkout (it is
    not on a package index), so ``pip install 'arborgraph[x]'`` would fail."""
    return f"scripts/setup {extra} in the Arborgraph checkout (or there: pip install -e '.[{extra}]')"
