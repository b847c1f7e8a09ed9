"""A model named by path is read as its folder says: pooled by the mean or by its first
token ([CLS], bge), with the prompts it puts before questions and texts (e5's "query: "
and "passage: "), reading as many tokens as it was made to; what it cannot do is said."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from aster_persist.index import encoder
from aster_persist.index.encoder import Encoder, SemanticUnavailable
from aster_persist.index.recipe import Recipe

TEXT = "The deploy to production failed because the database password had expired."


def folder_of(tmp_path: Path, name: str, **files: Any) -> Path:
    """The default model's weights, config and tokenizer, with ``files`` beside them
    (relative path -> JSON)."""
    folder = tmp_path / name
    folder.mkdir()
    for file in ("config.json", "model.safetensors", "tokenizer.json"):
        shutil.copyfile(encoder.default_folder() / file, folder / file)
    for path, value in files.items():
        target = folder / path.replace("__", "/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(orjson.dumps(value))
    return folder


@pytest.fixture(scope="module")
def default() -> Encoder:
    return encoder.load()


def close(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.allclose(a, b, atol=1e-5))


def test_the_default_model_reads_as_its_folder_says_mean_pooling_256_tokens_no_prompts(
    default: Encoder, tmp_path: Path
) -> None:
    assert default.recipe == Recipe(pooling="mean", max_tokens=256)
    assert Recipe.of(tmp_path) == Recipe()  # a folder that says nothing: the same reading
    bare = Encoder(folder_of(tmp_path, "bare"), quick=False)
    assert bare.identity == default.identity  # its vectors are the same: kept, not remade
    assert close(bare.embed([TEXT]), default.embed([TEXT]))


def test_a_model_pooled_by_its_first_token_gives_that_tokens_vector(
    default: Encoder, tmp_path: Path
) -> None:
    pooling = {"word_embedding_dimension": 384, "pooling_mode_cls_token": True}
    cls = Encoder(folder_of(tmp_path, "cls", **{"1_Pooling__config.json": pooling}), quick=False)
    assert cls.recipe.pooling == "cls"
    ids = np.array([cls.tokenizer.encode(TEXT).ids], dtype=np.int64)
    (hidden,) = cls.session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
    first = hidden[0, 0] / np.linalg.norm(hidden[0, 0])
    assert close(cls.embed([TEXT])[0], first)
    assert close(cls.ask(TEXT), first)
    assert not close(cls.embed([TEXT]), default.embed([TEXT]))
    assert cls.identity != default.identity  # vectors made otherwise are made again


def test_the_pooling_module_is_found_where_modules_json_puts_it(tmp_path: Path) -> None:
    modules = [
        {"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "path": "pool", "type": "sentence_transformers.models.Pooling"},
    ]
    folder = folder_of(
        tmp_path,
        "moved",
        **{"modules.json": modules, "pool__config.json": {"pooling_mode_cls_token": True}},
    )
    assert Recipe.of(folder).pooling == "cls"


def test_prompts_go_before_questions_and_before_texts_kept_for_search(
    default: Encoder, tmp_path: Path
) -> None:
    prompts = {"prompts": {"query": "query: ", "passage": "passage: "}}
    e5 = Encoder(
        folder_of(tmp_path, "e5", **{"config_sentence_transformers.json": prompts}), quick=False
    )
    assert (e5.recipe.query_prompt, e5.recipe.document_prompt) == ("query: ", "passage: ")
    assert close(e5.ask(TEXT), default.embed(["query: " + TEXT])[0])
    assert close(e5.embed([TEXT, ""]), np.vstack([default.embed(["passage: " + TEXT]), [0] * 384]))
    assert not close(e5.ask(TEXT), e5.embed([TEXT])[0])
    assert e5.identity != default.identity


def test_a_model_reads_as_many_tokens_as_its_folder_says(tmp_path: Path) -> None:
    short = Encoder(
        folder_of(tmp_path, "short", **{"sentence_bert_config.json": {"max_seq_length": 8}}),
        quick=False,
    )
    assert short.read == 8
    a, b = short.embed([TEXT, TEXT.replace("expired", "leaked")])
    assert close(a, b)  # the word that differs is past what it reads


@pytest.mark.parametrize(
    ("files", "said"),
    [
        ({"1_Pooling__config.json": {"pooling_mode_max_tokens": True}}, "pools by max"),
        ({"1_Pooling__config.json": {"pooling_mode_lasttoken": True}}, "pools by lasttoken"),
        ({"config_sentence_transformers.json": {"prompts": {"query": 3}}}, "not texts"),
        ({"1_Pooling__config.json": ["pooling_mode_cls_token"]}, "holds no object"),
        ({"modules.json": {"modules": []}}, "holds no list"),
        (
            {
                "1_Pooling__config.json": {
                    "pooling_mode_mean_tokens": True,
                    "include_prompt": False,
                },
                "config_sentence_transformers.json": {"prompts": {"query": "query: "}},
            },
            "leaves the prompt out",
        ),
    ],
)
def test_what_the_encoder_cannot_do_is_refused_plainly(
    tmp_path: Path, files: dict[str, Any], said: str
) -> None:
    with pytest.raises(SemanticUnavailable, match=said):
        Encoder(folder_of(tmp_path, "odd", **files), quick=False)


def test_a_recipe_file_that_is_not_json_is_refused(tmp_path: Path) -> None:
    folder = folder_of(tmp_path, "broken")
    (folder / "sentence_bert_config.json").write_text("{not json")
    with pytest.raises(SemanticUnavailable, match="is not JSON"):
        Encoder(folder, quick=False)


@pytest.mark.parametrize(
    ("pooling", "said"),
    [
        ({"pooling_mode_max_tokens": True}, "pools by max"),
        (["pooling_mode_cls_token"], "holds no object"),  # a plain refusal, no traceback
    ],
)
def test_a_model_folder_the_encoder_cannot_read_as_asked_is_refused_at_start(
    tmp_path: Path, pooling: Any, said: str
) -> None:
    from aster_persist.app import create_app
    from aster_persist.settings import Settings

    folder = folder_of(tmp_path, "odd", **{"1_Pooling__config.json": pooling})
    with pytest.raises(ValueError, match=rf"ASTER_SEMANTIC_MODEL=.*{said}"):
        create_app(Settings(home=tmp_path / "home", semantic=True, semantic_model=folder))
    assert not (tmp_path / "home").exists()  # nothing made of a start refused
