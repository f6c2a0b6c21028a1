"""Arborgraph's core: the types, protocols, errors and text tools every layer shares.

Nothing here imports any other part of the project (``tests/test_layers.py`` keeps it
so); ``ingest/``, ``raptor/`` and ``graphrag/`` build on this package alone, and the
index, build, query, service and CLI layers build on them.
"""
