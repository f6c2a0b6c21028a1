"""A BERT encoder as an ONNX graph, written from its safetensors weights without torch.

:func:`build_bert_onnx` turns a BERT-family sentence-transformers directory (``config.json``
and ``model.safetensors``) into the graph the ONNX embedder runs: the transformer up to
its last hidden state, with dynamic batch and sequence axes, in standard ONNX operators
(opset 17), its large weight matrices stored as float16 and widened back to float32 when
the session loads. Everything is computed in float32: unlike dynamic int8, whose integer
kernels differ between instruction sets (AVX2, AVX-512 VNNI, AMX), the vectors agree
across x86-64 CPUs to ~1e-7, and a text's vector does not depend on its batch neighbours.

The graph follows ``transformers``' ``BertModel`` in eager mode, node for node, in the
shapes ONNX Runtime's fusion patterns know (the attention mask as two ``Unsqueeze``, a
``Cast``, ``Sub`` and ``Mul``; the positions as a ``Slice`` of a constant row); it is not
fused beforehand: onnxruntime's own optimisations at load make it faster than its
Python BERT fusions did (benchmarks/results/embedding_cpu_independence.json). Needs
``onnx`` and ``safetensors``: the ``[model-build]`` extra. Only builds import this module.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from arborgraph.core.errors import EmbedderUnavailable
from arborgraph.core.model_files import Precision

if TYPE_CHECKING:
    import onnx

    # what a narrowed weight becomes: the initializers stored instead of it, and the nodes
    # that rebuild it, in float32 and under its name, when the session loads
    Narrowed = tuple[list[onnx.TensorProto], list[onnx.NodeProto]]

__all__ = [
    "BUILD_PACKAGES",
    "BertShape",
    "bert_graph",
    "bert_shape",
    "build_bert_onnx",
    "load_bert_weights",
    "narrow_weights",
    "store_weights",
]

# What a build imports; checked (without importing) before it starts, to name the extra.
BUILD_PACKAGES = ("onnx", "safetensors")
OPSET = 17
# ONNX IR 8 is what onnxruntime 1.20, the oldest the project allows, reads.
IR_VERSION = 8
PRODUCER = "arborgraph"
# Weight matrices at least this large are stored as float16 (the embedding tables, the
# projections); biases and LayerNorm parameters stay float32.
_SMALL_TENSOR = 4096
# ``(1 - mask) * lowest float``: transformers' additive attention mask, which ORT's
# attention fusion recognises and keeps as its mask filter value.
_MASK_FILL = float(np.finfo(np.float32).min)


@dataclass(frozen=True)
class BertShape:
    """The hyper-parameters of a BERT encoder, from its ``config.json``."""

    layers: int
    hidden: int
    heads: int
    intermediate: int
    vocab: int
    positions: int
    token_types: int
    layer_norm_eps: float

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def bert_shape(config: Mapping[str, Any], source: Path) -> BertShape:
    """The shape of the encoder ``config`` describes; EmbedderUnavailable if it is not a plain BERT."""
    kind = config.get("model_type")
    if kind != "bert":
        raise EmbedderUnavailable(
            f"{source}: model_type {kind!r}; the torch-free ONNX build supports BERT encoders only "
            "(use embedding.backend 'sentence-transformers' for other architectures)"
        )
    act = config.get("hidden_act", "gelu")
    position_kind = config.get("position_embedding_type", "absolute")
    if act != "gelu" or position_kind != "absolute":
        raise EmbedderUnavailable(
            f"{source}: hidden_act {act!r}, position_embedding_type {position_kind!r}; the ONNX build "
            "supports exact gelu and absolute positions"
        )
    try:
        shape = BertShape(
            layers=int(config["num_hidden_layers"]),
            hidden=int(config["hidden_size"]),
            heads=int(config["num_attention_heads"]),
            intermediate=int(config["intermediate_size"]),
            vocab=int(config["vocab_size"]),
            positions=int(config.get("max_position_embeddings", 512)),
            token_types=int(config.get("type_vocab_size", 2)),
            layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise EmbedderUnavailable(f"{source}: not a complete BERT config.json ({exc})") from exc
    if shape.hidden % shape.heads:
        raise EmbedderUnavailable(f"{source}: hidden_size {shape.hidden} is not a multiple of {shape.heads} heads")
    return shape


def load_bert_weights(path: Path) -> dict[str, np.ndarray]:
    """The tensors of ``model.safetensors``, named as in ``BertModel`` (a ``bert.`` prefix dropped)."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        tensors = load_file(str(path))
    except (OSError, SafetensorError) as exc:
        raise EmbedderUnavailable(f"cannot read {path}: {exc}") from exc
    return {name.removeprefix("bert."): array for name, array in tensors.items()}


class _Graph:
    """Nodes and initializers of the graph being written."""

    def __init__(self, weights: Mapping[str, np.ndarray], source: str) -> None:
        from onnx import helper, numpy_helper

        self._helper, self._numpy_helper = helper, numpy_helper
        self._weights = weights
        self._source = source
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def weight(self, name: str, *, transpose: bool = False) -> str:
        """The tensor ``name`` of the checkpoint, as an initializer (a Linear's transposed
        to the (in, out) layout MatMul takes)."""
        try:
            array = self._weights[name]
        except KeyError:
            raise EmbedderUnavailable(f"{self._source} has no tensor {name}") from None
        array = np.ascontiguousarray(array.T if transpose else array, dtype=np.float32)
        self.initializers.append(self._numpy_helper.from_array(array, name))
        return name

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self._numpy_helper.from_array(value, name))
        return name

    def op(self, op_type: str, inputs: list[str], output: str, **attributes: Any) -> str:
        self.nodes.append(self._helper.make_node(op_type, inputs, [output], name=output, **attributes))
        return output

    def linear(self, x: str, prefix: str, out: str) -> str:
        product = self.op("MatMul", [x, self.weight(f"{prefix}.weight", transpose=True)], f"{out}/matmul")
        return self.op("Add", [product, self.weight(f"{prefix}.bias")], out)

    def layer_norm(self, x: str, prefix: str, out: str, eps: float) -> str:
        return self.op(
            "LayerNormalization", [x, self.weight(f"{prefix}.weight"), self.weight(f"{prefix}.bias")], out,
            axis=-1, epsilon=eps,
        )


def _embeddings(g: _Graph, shape: BertShape) -> str:
    """Word + token type + position embeddings, layer-normalised."""
    words = g.op("Gather", [g.weight("embeddings.word_embeddings.weight"), "input_ids"], "embeddings/words")
    types = g.op("Gather", [g.weight("embeddings.token_type_embeddings.weight"), "token_type_ids"], "embeddings/types")
    ids_shape = g.op("Shape", ["input_ids"], "embeddings/ids_shape")
    length = g.op("Gather", [ids_shape, g.const("embeddings/dim1", np.array(1, np.int64))], "embeddings/length", axis=0)
    end = g.op("Unsqueeze", [length, g.const("embeddings/axis0", np.array([0], np.int64))], "embeddings/end")
    all_positions = g.const("embeddings/position_ids", np.arange(shape.positions, dtype=np.int64)[None, :])
    zero, one = g.const("embeddings/zero", np.array([0], np.int64)), g.const("embeddings/one", np.array([1], np.int64))
    positions = g.op("Slice", [all_positions, zero, end, one, one], "embeddings/positions")
    position_vectors = g.op(
        "Gather", [g.weight("embeddings.position_embeddings.weight"), positions], "embeddings/position_vectors"
    )
    summed = g.op("Add", [g.op("Add", [words, types], "embeddings/words_types"), position_vectors], "embeddings/sum")
    return g.layer_norm(summed, "embeddings.LayerNorm", "embeddings/output", shape.layer_norm_eps)


def _mask_bias(g: _Graph) -> str:
    """The additive attention mask, (batch, 1, 1, sequence): 0 for tokens, lowest float for padding."""
    mask = g.op("Unsqueeze", ["attention_mask", g.const("mask/axis1", np.array([1], np.int64))], "mask/3d")
    mask = g.op("Unsqueeze", [mask, g.const("mask/axis2", np.array([2], np.int64))], "mask/4d")
    mask = g.op("Cast", [mask], "mask/float", to=1)  # TensorProto.FLOAT
    inverted = g.op("Sub", [g.const("mask/one", np.array(1.0, np.float32)), mask], "mask/inverted")
    return g.op("Mul", [inverted, g.const("mask/fill", np.array(_MASK_FILL, np.float32))], "mask/bias")


def _layer(g: _Graph, x: str, index: int, mask_bias: str, shape: BertShape) -> str:
    """One encoder layer: self-attention and the feed-forward block, each with its residual LayerNorm."""
    p, n = f"encoder.layer.{index}", f"layer{index}"
    split = g.const(f"{n}/split_heads", np.array([0, 0, shape.heads, shape.head_dim], np.int64))
    merge = g.const(f"{n}/merge_heads", np.array([0, 0, shape.hidden], np.int64))

    def heads(name: str, perm: list[int]) -> str:
        projected = g.linear(x, f"{p}.attention.self.{name}", f"{n}/{name}")
        return g.op("Transpose", [g.op("Reshape", [projected, split], f"{n}/{name}/split")], f"{n}/{name}/heads", perm=perm)

    query, key, value = heads("query", [0, 2, 1, 3]), heads("key", [0, 2, 3, 1]), heads("value", [0, 2, 1, 3])
    scores = g.op("MatMul", [query, key], f"{n}/scores")
    scores = g.op("Div", [scores, g.const(f"{n}/sqrt_head_dim", np.array(np.sqrt(shape.head_dim), np.float32))], f"{n}/scaled")
    scores = g.op("Add", [scores, mask_bias], f"{n}/masked")
    probs = g.op("Softmax", [scores], f"{n}/probs", axis=-1)
    context = g.op("Transpose", [g.op("MatMul", [probs, value], f"{n}/context")], f"{n}/context/t", perm=[0, 2, 1, 3])
    context = g.op("Reshape", [context, merge], f"{n}/context/merged")
    attended = g.linear(context, f"{p}.attention.output.dense", f"{n}/attention_out")
    x = g.layer_norm(
        g.op("Add", [attended, x], f"{n}/attention_residual"), f"{p}.attention.output.LayerNorm",
        f"{n}/attention_norm", shape.layer_norm_eps,
    )
    inner = g.linear(x, f"{p}.intermediate.dense", f"{n}/intermediate")
    # exact gelu, x * 0.5 * (1 + erf(x / sqrt 2)), in the form the fusion turns into BiasGelu
    erf = g.op("Erf", [g.op("Div", [inner, g.const(f"{n}/sqrt2", np.array(np.sqrt(2.0), np.float32))], f"{n}/gelu/div")], f"{n}/gelu/erf")
    erf = g.op("Add", [erf, g.const(f"{n}/gelu/one", np.array(1.0, np.float32))], f"{n}/gelu/add")
    gelu = g.op("Mul", [g.op("Mul", [inner, erf], f"{n}/gelu/mul"), g.const(f"{n}/gelu/half", np.array(0.5, np.float32))], f"{n}/gelu")
    out = g.linear(gelu, f"{p}.output.dense", f"{n}/output")
    return g.layer_norm(
        g.op("Add", [out, x], f"{n}/output_residual"), f"{p}.output.LayerNorm", f"{n}/output_norm",
        shape.layer_norm_eps,
    )


def bert_graph(weights: Mapping[str, np.ndarray], shape: BertShape, source: str = "the checkpoint") -> onnx.ModelProto:
    """The float32 graph: inputs ``input_ids``, ``attention_mask``, ``token_type_ids``
    (int64, batch x sequence), output ``last_hidden_state`` (batch x sequence x hidden)."""
    import onnx
    from onnx import TensorProto, helper

    g = _Graph(weights, source)
    x = _embeddings(g, shape)
    mask_bias = _mask_bias(g)
    for index in range(shape.layers):
        x = _layer(g, x, index, mask_bias, shape)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))
    axes = ["batch", "sequence"]
    graph = helper.make_graph(
        g.nodes,
        "bert",
        [helper.make_tensor_value_info(name, TensorProto.INT64, axes) for name in ("input_ids", "attention_mask", "token_type_ids")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*axes, shape.hidden])],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name=PRODUCER)
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def narrow_weights(
    model: onnx.ModelProto, narrow: Callable[[str, np.ndarray], Narrowed | None]
) -> onnx.ModelProto:
    """``model`` with every large float32 matrix replaced by what ``narrow`` makes of it
    (None: kept as it is): the initializers stored instead, and the nodes that widen them
    back into a float32 tensor of the old name, which ONNX Runtime folds into an
    initializer when the session loads (so the arithmetic stays float32)."""
    from onnx import TensorProto, numpy_helper

    graph = model.graph
    kept: list[onnx.TensorProto] = []
    stored: list[onnx.TensorProto] = []
    widen: list[onnx.NodeProto] = []
    for tensor in graph.initializer:
        big = tensor.data_type == TensorProto.FLOAT and len(tensor.dims) == 2 and int(np.prod(tensor.dims)) >= _SMALL_TENSOR
        narrowed = narrow(tensor.name, numpy_helper.to_array(tensor)) if big else None
        if narrowed is None:
            kept.append(tensor)
            continue
        stored += narrowed[0]
        widen += narrowed[1]
    nodes = [*widen, *graph.node]
    del graph.initializer[:]
    graph.initializer.extend([*kept, *stored])
    del graph.node[:]
    graph.node.extend(nodes)
    return model


def store_weights(model: onnx.ModelProto, precision: Precision) -> onnx.ModelProto:
    """``model`` with its weights stored as ``precision`` says: for "fp16-weights" every
    large matrix as float16, widened back by a ``Cast`` when the session loads."""
    if precision == "fp32":
        return model
    from onnx import TensorProto, helper, numpy_helper

    def to_float16(name: str, array: np.ndarray) -> Narrowed:
        stored = f"{name}/float16"
        cast = helper.make_node("Cast", [stored], [name], name=f"{name}/widen", to=TensorProto.FLOAT)
        return [numpy_helper.from_array(array.astype(np.float16), stored)], [cast]

    return narrow_weights(model, to_float16)


def build_bert_onnx(source: Path, target: Path, precision: Precision) -> dict[str, Any]:
    """Write ``target`` (an ONNX file) from the BERT sentence-transformers directory ``source``;
    return the facts a manifest records (the graph's operators and how many of each)."""
    import onnx

    config_path = source / "config.json"
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbedderUnavailable(f"cannot read {config_path}: {exc}") from exc
    shape = bert_shape(config, config_path)
    weights = source / "model.safetensors"
    if not weights.is_file():
        raise EmbedderUnavailable(f"{source} has no model.safetensors (the build reads no other weight format)")
    model = store_weights(bert_graph(load_bert_weights(weights), shape, str(source)), precision)
    onnx.save(model, str(target))
    return {"operators": dict(sorted(Counter(node.op_type for node in model.graph.node).items()))}
