"""How a sentence-embedding model makes one vector of a text, as its folder says in the
files sentence-transformers keeps beside the weights: which token vectors are pooled
(``1_Pooling/config.json``: the mean of them all, or the first, [CLS]), how many tokens
it reads (``sentence_bert_config.json``) and the words put before a question and before
a text kept for search (``config_sentence_transformers.json``'s ``prompts``: e5's
"query: " and "passage: ", bge's instruction for questions). A folder without them is
read as all-MiniLM-L6-v2 is: mean pooling, no prompts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

POOLING = "1_Pooling/config.json"
LENGTH = "sentence_bert_config.json"
PROMPTS = "config_sentence_transformers.json"
MODULES = "modules.json"
# the names sentence-transformers' models give the prompt of a text kept for search
DOCUMENT_PROMPTS = ("document", "passage", "corpus", "text")


class RecipeError(ValueError):
    """The folder asks for something this encoder does not do, or cannot be read."""


@dataclass(frozen=True)
class Recipe:
    pooling: str = "mean"  # "mean" or "cls"
    max_tokens: int | None = None  # the model's own limit, when its folder says
    query_prompt: str = ""
    document_prompt: str = ""

    @classmethod
    def of(cls, folder: Path) -> Recipe:
        """The recipe of the model in ``folder``."""

        def load(name: str, kind: type = dict) -> Any:
            """The JSON of the file ``name``, of type ``kind``; None when there is none."""
            path = folder / name
            if not path.is_file():  # (a link is read, as the weights' are: a hub's snapshot)
                return None
            try:
                value = orjson.loads(path.read_bytes())
            except orjson.JSONDecodeError as exc:
                raise RecipeError(f"{path} is not JSON: {exc}") from None
            if not isinstance(value, kind):
                raise RecipeError(f"{path} holds no {'list' if kind is list else 'object'}")
            return value

        pooling_file = POOLING
        for module in load(MODULES, list) or []:
            if isinstance(module, dict) and str(module.get("type", "")).endswith(".Pooling"):
                pooling_file = f"{module.get('path') or '1_Pooling'}/config.json"
        pooling_config = load(pooling_file) or {}
        pooling = _pooling(pooling_config, folder / pooling_file)
        tokens = (load(LENGTH) or {}).get("max_seq_length")
        prompts = (load(PROMPTS) or {}).get("prompts") or {}
        if not isinstance(prompts, dict) or not all(isinstance(v, str) for v in prompts.values()):
            raise RecipeError(f"{folder / PROMPTS}: its prompts are not texts by name")
        if pooling_config.get("include_prompt") is False and prompts:
            raise RecipeError(
                f"{folder / pooling_file} leaves the prompt out of the pooling: not supported"
            )
        return cls(
            pooling=pooling,
            max_tokens=int(tokens) if isinstance(tokens, int) and tokens > 2 else None,
            query_prompt=prompts.get("query", ""),
            document_prompt=next((prompts[n] for n in DOCUMENT_PROMPTS if n in prompts), ""),
        )


def _pooling(config: dict[str, Any], path: Path) -> str:
    modes = {
        key.removeprefix("pooling_mode_").removesuffix("_tokens").removesuffix("_token")
        for key, on in config.items()
        if key.startswith("pooling_mode_") and on is True
    }
    if modes == {"cls"}:
        return "cls"
    if modes in ({"mean"}, set()):
        return "mean"
    raise RecipeError(
        f"{path} pools by {', '.join(sorted(modes))}: only the mean of the tokens or the "
        "first token ([CLS]) is supported"
    )
