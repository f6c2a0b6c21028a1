"""What the torch-free ONNX build accepts from a model's config.json, and what it refuses
in one line (the graph itself is tested end to end: tests/integration/test_embedding.py
rebuilds the shipped model from its source weights)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arborgraph.core.errors import EmbedderUnavailable
from arborgraph.models.bert_graph import BertShape, bert_shape

MINILM: dict[str, Any] = {
    "model_type": "bert", "hidden_act": "gelu", "hidden_size": 384, "intermediate_size": 1536,
    "num_attention_heads": 12, "num_hidden_layers": 6, "vocab_size": 30522, "layer_norm_eps": 1e-12,
    "max_position_embeddings": 512, "type_vocab_size": 2, "position_embedding_type": "absolute",
}
WHERE = Path("model/config.json")


def test_a_bert_config_gives_its_shape() -> None:
    assert bert_shape(MINILM, WHERE) == BertShape(
        layers=6, hidden=384, heads=12, intermediate=1536, vocab=30522, positions=512, token_types=2,
        layer_norm_eps=1e-12,
    )
    assert bert_shape(MINILM, WHERE).head_dim == 32


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"model_type": "mpnet"}, "model_type 'mpnet'; the torch-free ONNX build supports BERT encoders only"),
        ({"hidden_act": "relu"}, "hidden_act 'relu'"),
        ({"position_embedding_type": "relative_key"}, "position_embedding_type 'relative_key'"),
        ({"num_hidden_layers": None}, "not a complete BERT config.json"),
        ({"num_attention_heads": 5}, "hidden_size 384 is not a multiple of 5 heads"),
    ],
)
def test_what_the_build_cannot_write_is_refused_in_one_line(change: dict[str, Any], says: str) -> None:
    with pytest.raises(EmbedderUnavailable) as caught:
        bert_shape({**MINILM, **change}, WHERE)
    assert says in str(caught.value) and str(WHERE) in str(caught.value)
    assert "\n" not in str(caught.value)
