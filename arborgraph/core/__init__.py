"""Arborgraph's core: the types, protocols, errors and text tools every layer shares.

Nothing here imports any other part of the project (``tests/unit/test_layers.py`` keeps it
so): ``ingest/`` builds on this package alone, ``raptor/`` and ``graphrag/`` on it and
``ingest``, and the index, build, query, service and CLI layers on all of them.

- ``errors``: the one error hierarchy (``UserError``, ``ExternalError``)
- ``results``: ``Context``, ``QueryResult``, ``RoutingDecision``, ``BuildMode``, ``Route``
- ``protocols``: ``Embedder``, ``ChatModel``, ``Executor``, ``ProgressCallback``
- ``text``: the analyser, the sentence splitter and its rules, stopwords, abbreviations
- ``lexical``: BM25 over any list of texts
- ``concurrency``: ordered thread maps for model calls, ``naming_item``
- ``processes``: worker processes (``worker_context``) and ``available_cores``
- ``model_files``: the shipped ONNX model and the checks of a model directory
- ``embedding_identity``: ``EmbeddingIdentity``, what exactly made an index's vectors
- ``cards``: the HTML cards of records in notebooks
"""
