"""A BERT encoder as an ONNX graph, built from its weights: the model's
``model.safetensors`` and ``config.json`` (the layout Hugging Face's ``BertModel`` saves),
run by ONNX Runtime with no torch. The graph takes ``input_ids`` and ``attention_mask``
(batch x tokens) and gives ``last_hidden_state`` (batch x tokens x hidden).

Only what sentence-embedding models of the BERT family use: absolute positions, one
token type, GELU (erf), post-layer normalisation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import ModelProto, TensorProto, helper, numpy_helper

OPSET = 17  # LayerNormalization is an operator from 17 on


class _Graph:
    """Nodes and weights, added in order."""

    def __init__(self, weights: dict[str, np.ndarray]) -> None:
        self.weights = weights
        self.nodes: list[Any] = []
        self.constants: list[Any] = []

    def constant(self, name: str, value: Any) -> str:
        self.constants.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, kind: str, inputs: list[str], **attributes: Any) -> str:
        output = f"{kind}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(kind, inputs, [output], **attributes))
        return output

    def weight(self, name: str) -> np.ndarray:
        return np.ascontiguousarray(self.weights[name], dtype=np.float32)

    def linear(self, x: str, name: str) -> str:
        matrix = self.constant(f"{name}.wT", self.weight(f"{name}.weight").T.copy())
        bias = self.constant(f"{name}.b", self.weight(f"{name}.bias"))
        return self.op("Add", [self.op("MatMul", [x, matrix]), bias])

    def norm(self, x: str, name: str, eps: float) -> str:
        scale = self.constant(f"{name}.g", self.weight(f"{name}.weight"))
        shift = self.constant(f"{name}.beta", self.weight(f"{name}.bias"))
        return self.op("LayerNormalization", [x, scale, shift], axis=-1, epsilon=eps)


def encoder(weights: dict[str, np.ndarray], config: dict[str, Any]) -> ModelProto:
    """The encoder of ``weights`` (names with or without the ``bert.`` prefix)."""
    g = _Graph({k.removeprefix("bert."): v for k, v in weights.items()})
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    layers, eps = int(config["num_hidden_layers"]), float(config.get("layer_norm_eps", 1e-12))
    width = hidden // heads
    one, zero = (
        g.constant("one_i", np.array(1, np.int64)),
        g.constant("zero_i", np.array(0, np.int64)),
    )
    length = g.op("Gather", [g.op("Shape", ["input_ids"]), one], axis=0)
    positions = g.op("Range", [zero, length, one])
    words = g.op(
        "Gather", [g.constant("words", g.weight("embeddings.word_embeddings.weight")), "input_ids"]
    )
    where = g.op(
        "Gather",
        [g.constant("where", g.weight("embeddings.position_embeddings.weight")), positions],
    )
    kind = g.constant("kind", g.weight("embeddings.token_type_embeddings.weight")[0])
    x = g.norm(g.op("Add", [g.op("Add", [words, where]), kind]), "embeddings.LayerNorm", eps)
    # padding: a large negative added to the attention scores of the padded tokens
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    onef = g.constant("one_f", np.array(1, np.float32))
    masked = g.op("Mul", [g.op("Sub", [onef, mask]), g.constant("far", np.array(-1e9, np.float32))])
    masked = g.op("Unsqueeze", [masked, g.constant("axes", np.array([1, 2], np.int64))])
    split = g.constant("split", np.array([0, 0, heads, width], np.int64))
    joined = g.constant("joined", np.array([0, 0, hidden], np.int64))
    scale = g.constant("scale", np.array(1 / np.sqrt(width), np.float32))
    half = g.constant("half", np.array(0.5, np.float32))
    root2 = g.constant("root2", np.array(np.sqrt(2), np.float32))
    for n in range(layers):
        p = f"encoder.layer.{n}."

        def heads_of(name: str, perm: list[int], x: str = x) -> str:
            return g.op("Transpose", [g.op("Reshape", [g.linear(x, name), split])], perm=perm)

        q = heads_of(p + "attention.self.query", [0, 2, 1, 3])
        k = heads_of(p + "attention.self.key", [0, 2, 3, 1])
        v = heads_of(p + "attention.self.value", [0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), masked])
        attended = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [attended], perm=[0, 2, 1, 3]), joined])
        x = g.op("Add", [g.linear(context, p + "attention.output.dense"), x])
        x = g.norm(x, p + "attention.output.LayerNorm", eps)
        h = g.linear(x, p + "intermediate.dense")  # GELU, exact: h/2 (1 + erf(h / sqrt 2))
        h = g.op(
            "Mul",
            [g.op("Mul", [h, half]), g.op("Add", [g.op("Erf", [g.op("Div", [h, root2])]), onef])],
        )
        x = g.norm(g.op("Add", [g.linear(h, p + "output.dense"), x]), p + "output.LayerNorm", eps)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    graph = helper.make_graph(
        g.nodes,
        "bert",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        ],
        [
            helper.make_tensor_value_info(
                "last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", hidden]
            )
        ],
        g.constants,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model
