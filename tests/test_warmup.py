"""Format warm-up: reference answers, settings, and a real supervised fine-tune of the tiny model."""

from __future__ import annotations

import json

import pytest

from gdpo.plan import WARMUP_DEFAULTS, WarmupSettings, resolve_warmup_settings
from gdpo.tasks import required_files
from gdpo.tasks.tool_calling import REWARD_FUNCTIONS, build_dataset, reference_completion
from gdpo.training.models import build_tiny_model
from gdpo.training.warmup import warmup_dataset, warmup_model

CALL = {"name": "get_weather", "parameters": {"city": "Paris", "days": 2}}


def split_row(item_id, category, calls, answer_type="tool_call"):
    """A row in bfcl_split's format (the fields build_dataset reads)."""
    return {"id": item_id, "category": category, "category_size": 10, "language": "Python",
            "question": [{"role": "user", "content": f"Weather for {item_id}?"}], "function": [],
            "tools": [{"name": "get_weather", "description": "Weather forecast", "parameters": {}}],
            "possible_answer": None, "answer_type": answer_type, "ground_truth_calls": calls}


@pytest.fixture
def split_dir(tmp_path):
    rows = [split_row(f"simple_{i}", "simple", [CALL]) for i in range(6)]
    rows += [split_row(f"irrelevance_{i}", "irrelevance", [], "response") for i in range(2)]
    for name in ("train", "eval"):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def test_reference_answers_earn_full_format_and_correctness(split_dir):
    rows = build_dataset("train", None, 0, data_dir=str(split_dir))
    answers = [reference_completion(row) for row in rows]
    assert all(answers)
    columns = {k: rows[k] for k in ("answer_type", "ground_truth_calls")}
    assert REWARD_FUNCTIONS["format"](answers, **columns) == [1.0] * len(rows)
    correct = REWARD_FUNCTIONS["correct"](answers, **columns)
    # Tool-call items score the maximum 3; items expecting no call score 0 (ToolRL's convention).
    assert sorted(set(correct)) == [0.0, 3.0]


def test_required_files_name_the_split_the_workflow_makes():
    spec = {"family": "tool_calling", "model": "m", "data_dir": "resources/data/bfcl_v3_split"}
    assert required_files(spec) == ["resources/data/bfcl_v3_split/train.jsonl",
                                    "resources/data/bfcl_v3_split/eval.jsonl"]
    assert required_files({"family": "arithmetic", "model": "m"}) == []


def test_settings_only_for_tasks_with_a_warmup_block(split_dir):
    config = {"tasks": {"plain": {"family": "tool_calling", "model": "m", "data_dir": str(split_dir)},
                        "warm": {"family": "tool_calling", "model": "m", "data_dir": str(split_dir),
                                 "warmup": {"max_steps": 3}}}}
    assert resolve_warmup_settings(config, "plain") is None
    settings = resolve_warmup_settings(config, "warm")
    assert settings.max_steps == 3 and settings.train_size == WARMUP_DEFAULTS["train_size"]
    assert settings.options == {"data_dir": str(split_dir)}
    # the RL training's item mix does not change the warm-up's: one start model for any decline_share
    config["tasks"]["warm"]["decline_share"] = 0.0
    assert resolve_warmup_settings(config, "warm") == settings


def test_a_family_without_reference_answers_is_refused():
    settings = WarmupSettings(task="a", family="arithmetic", options={})
    with pytest.raises(ValueError, match="no reference answers"):
        warmup_dataset(settings)


def test_warmup_fine_tunes_and_saves_a_loadable_model(split_dir, tmp_path):
    model_dir = build_tiny_model(tmp_path / "base")
    settings = WarmupSettings(task="t", family="tool_calling", options={"data_dir": str(split_dir)}, max_steps=3,
                              train_size=8, learning_rate=1e-3)
    record = warmup_model(settings, model_dir, tmp_path / "warm")
    assert record["examples"] == 8 and len(record["losses"]) == 3
    # A high learning rate on 8 fixed answers: the loss falls, so the weights really changed.
    assert record["losses"][-1] < record["losses"][0]
    assert (tmp_path / "warm" / "config.json").is_file()
    assert json.loads((tmp_path / "warm" / "warmup.json").read_text())["settings"] == settings.to_dict()


def test_frozen_embeddings_stay_fixed_while_the_rest_trains(split_dir, tmp_path):
    from safetensors.torch import load_file

    model_dir = build_tiny_model(tmp_path / "base")
    settings = WarmupSettings(task="t", family="tool_calling", options={"data_dir": str(split_dir)}, max_steps=2,
                              train_size=8, learning_rate=1e-3, freeze_embeddings=True)
    record = warmup_model(settings, model_dir, tmp_path / "warm")
    before, after = load_file(model_dir / "model.safetensors"), load_file(tmp_path / "warm" / "model.safetensors")
    embedding = "model.embed_tokens.weight"
    assert (after[embedding] == before[embedding]).all()
    assert any(not (after[name] == before[name]).all() for name in before if name != embedding)
    assert record["trainable_parameters"] == sum(t.numel() for name, t in before.items() if name != embedding)
