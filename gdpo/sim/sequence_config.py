"""Study files of the sequence bench (``bench: sequence``): YAML → validated :class:`SequenceRunConfig` per variant.

A sequence study names the policy's vocabulary and step-0 habits, the rewards computed from each sampled
sequence, and the training settings; ``grid`` (cartesian product of a few keys' values) or ``variants``
(named overrides) make its runs, ``extra_cells`` adds cells one factor at a time around one of them and
``positive_controls`` adds named cells engineered so that the study's outcome event happens
(:func:`gdpo.sim.config.build_study`). Every key is checked; a bad one raises ``ValueError`` naming the key,
what is allowed there and the file. Reward kinds and the token layout are described in
:mod:`gdpo.sim.sequence_rewards`.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from gdpo.methods import available_conventions, available_methods
from gdpo.sim.config import (
    EXTRA_CELLS_HELP, OPTIMIZERS, POSITIVE_CONTROLS_HELP, ConditioningSpec, _Checker, _format_grid_value, build_study,
)

REWARD_KINDS = ("correctness", "format", "length", "no_bug")
CORRECTNESS_SCALES = ("binary", "fraction", "ranged")
LOSS_TYPES = ("token_mean", "sequence_mean")
#: Outcomes a sequence study can count per seed (see :mod:`gdpo.sim.study`).
SEQUENCE_OUTCOMES = ("none", "fails_to_converge", "collapse")

_REWARD_KEYS = {
    "name": "reward name (a column of the results)",
    "kind": f"what the reward reads from the sequence: one of {', '.join(REWARD_KINDS)}",
    "scale": f"correctness only: one of {', '.join(CORRECTNESS_SCALES)} (binary = exact answer; fraction = share "
             "of answer slots right, in [0, 1]; ranged = the fraction mapped onto `range`)",
    "range": "[low, high] of a ranged correctness reward, e.g. ToolRL's [-3, 3]",
    "limit": "length only: the reward is 1 iff the response has at most this many tokens (integer ≥ 1)",
    "weight": "reward weight in the advantage (finite number, default 1)",
}
_BASE_KEYS = {
    "think_continue": "step-0 probability that a reasoning token is followed by another one, in [0, 1)",
    "off_template": "step-0 probability mass spread over all tokens in every state, in [0, 1) (format noise)",
    "answer_skill": "step-0 logit bonus of the right answer token(s), mean over prompts",
    "prompt_spread": "std over prompts of that bonus (logits, ≥ 0): per-prompt difficulty",
}
_TOP_KEYS = {
    "name": "study name",
    "bench": "sequence (this file's bench)",
    "description": "the question the study asks",
    "claims": "paper claim ids the study speaks to",
    "seeds": "number of seeds (seeds 0..N−1)",
    "steps": "optimizer steps per run (integer ≥ 1)",
    "prompts": "prompts per batch (integer ≥ 1)",
    "generations": "rollouts per prompt G (integer ≥ 2)",
    "methods": "advantage methods of the gdpo.advantages registry",
    "convention": "numeric convention of the gdpo.advantages registry",
    "optimizer": f"one of {', '.join(OPTIMIZERS)}",
    "learning_rate": "learning rate on the logits (> 0)",
    "clip_epsilon": "PPO clip range ε (> 0)",
    "inner_epochs": "optimizer steps on each sampled batch (integer ≥ 1)",
    "loss": f"loss aggregation: one of {', '.join(LOSS_TYPES)} (verl's token-mean; TRL's per-sequence mean)",
    "max_length": "response cap in tokens (integer 4..128): a response without the end token is truncated there",
    "answer_slots": "tokens in a right answer (1 = a math answer; 2 = a tool name and an argument)",
    "answer_choices": "candidate tokens per answer slot (integer 2..16)",
    "reasoning_needed": "[low, high]: reasoning tokens a prompt needs before its answer is right, spread "
                        "evenly over prompts (integers ≥ 0)",
    "base": "the step-0 policy: " + "; ".join(f"{k}: {v}" for k, v in _BASE_KEYS.items()),
    "rewards": "list of reward definitions",
    "conditioning": "{easy: name or [names], hard: name, threshold: number} (Eq. 8)",
    "outcome": f"per-seed outcome: {{kind: {' | '.join(SEQUENCE_OUTCOMES)}, reward: name}}",
    "variants": "mapping variant name → overrides of the keys above",
    "grid": "mapping key → list of values; every combination is a variant (fixed before results are seen)",
    "extra_cells": EXTRA_CELLS_HELP,
    "positive_controls": POSITIVE_CONTROLS_HELP,
}
_NOT_OVERRIDABLE = {"name", "bench", "description", "claims", "variants", "grid", "extra_cells", "positive_controls"}
_DEFAULTS: dict[str, Any] = {
    "description": "",
    "claims": [],
    "seeds": 32,
    "prompts": 16,
    "generations": 8,
    "convention": "trl",
    "optimizer": "adam",
    "clip_epsilon": 0.2,
    "inner_epochs": 1,
    "loss": "token_mean",
    "max_length": 24,
    "answer_slots": 1,
    "answer_choices": 4,
    "reasoning_needed": [0, 0],
    "base": {},
    "conditioning": None,
    "outcome": None,
}
_BASE_DEFAULTS = {"think_continue": 0.6, "off_template": 0.05, "answer_skill": 0.0, "prompt_spread": 1.0}
_REQUIRED = ("name", "steps", "methods", "learning_rate", "rewards")


@dataclasses.dataclass(frozen=True)
class SequenceRewardSpec:
    """One reward read from the sequence. ``low``/``high``: the paid range of the graded value in [0, 1]."""

    name: str
    kind: str
    scale: str = "binary"
    weight: float = 1.0
    low: float = 0.0
    high: float = 1.0
    limit: int = 0


@dataclasses.dataclass(frozen=True)
class BasePolicy:
    """Step-0 habits of the policy (the "base model"); see :func:`gdpo.sim.sequence_rewards.base_logits`."""

    think_continue: float
    off_template: float
    answer_skill: float
    prompt_spread: float


@dataclasses.dataclass(frozen=True)
class SequenceOutcome:
    """Per-seed event: ``fails_to_converge`` (:func:`gdpo.curve_events.fails_to_converge` on ``reward``'s
    success curve) or ``collapse`` (:func:`gdpo.curve_events.detect_divergence` on ``reward``'s success
    curve against the batch's maximum response length)."""

    kind: str = "none"
    reward: str = ""


@dataclasses.dataclass(frozen=True)
class SequenceRunConfig:
    """Everything one (variant, method) run of the sequence bench needs.

    S = len(seeds), P = prompts, G = generations, T = max_length, n = len(rewards).
    """

    seeds: tuple[int, ...]
    steps: int
    prompts: int
    generations: int
    methods: tuple[str, ...]
    convention: str
    optimizer: str
    learning_rate: float
    clip_epsilon: float
    inner_epochs: int
    loss: str
    max_length: int
    answer_slots: int
    answer_choices: int
    reasoning_needed: tuple[int, int]
    base: BasePolicy
    rewards: tuple[SequenceRewardSpec, ...]
    conditioning: ConditioningSpec | None
    outcome: SequenceOutcome
    bench: str = "sequence"
    #: The exact analysis enumerates binary rewards of unit weight; not attached to sequence studies.
    exact_counts: bool = False

    @property
    def reward_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rewards)

    def reward_index(self, name: str) -> int:
        return self.reward_names.index(name)


def _parse_reward(check: _Checker, raw: Any, key: str, max_length: int) -> SequenceRewardSpec:
    if not isinstance(raw, Mapping):
        check.fail(key, raw, "a mapping with keys " + ", ".join(_REWARD_KEYS))
    check.unknown_keys(raw, _REWARD_KEYS, prefix=f"{key}.")
    for required in ("name", "kind"):
        if required not in raw:
            raise ValueError(f"{check.path}{check.where}: missing key '{key}.{required}' ({_REWARD_KEYS[required]}).")
    name = raw["name"]
    if not isinstance(name, str) or not name:
        check.fail(f"{key}.name", name, "a non-empty string")
    kind = check.choice(f"{key}.kind", raw["kind"], REWARD_KINDS)
    weight = check.number(f"{key}.weight", raw.get("weight", 1.0))
    scale, low, high, limit = "binary", 0.0, 1.0, 0
    if kind == "correctness":
        scale = check.choice(f"{key}.scale", raw.get("scale", "binary"), CORRECTNESS_SCALES)
        if scale == "ranged":
            bounds = raw.get("range")
            if (not isinstance(bounds, Sequence) or isinstance(bounds, str) or len(bounds) != 2
                    or not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds)
                    or not bounds[0] < bounds[1]):
                check.fail(f"{key}.range", bounds, "[low, high] with low < high (required for scale 'ranged')")
            low, high = float(bounds[0]), float(bounds[1])
        elif "range" in raw:
            check.fail(f"{key}.range", raw["range"], "only with scale 'ranged'")
    else:
        for only in ("scale", "range"):
            if only in raw:
                check.fail(f"{key}.{only}", raw[only], "only on a correctness reward")
    if kind == "length":
        if "limit" not in raw:
            raise ValueError(f"{check.path}{check.where}: missing key '{key}.limit' ({_REWARD_KEYS['limit']}).")
        limit = check.integer(f"{key}.limit", raw["limit"], 1, max_length)
    elif "limit" in raw:
        check.fail(f"{key}.limit", raw["limit"], "only on a length reward")
    return SequenceRewardSpec(name, kind, scale, weight, low, high, limit)


def _resolve(check: _Checker, data: Mapping) -> SequenceRunConfig:
    check.unknown_keys(data, _TOP_KEYS)
    for key in _REQUIRED:
        if key not in data:
            raise ValueError(f"{check.path}{check.where}: missing key '{key}' ({_TOP_KEYS[key]}).")
    merged = {**_DEFAULTS, **data}
    seeds = tuple(range(check.integer("seeds", merged["seeds"], 1, 100_000)))
    methods_raw = merged["methods"]
    if isinstance(methods_raw, str) or not isinstance(methods_raw, Sequence) or not methods_raw:
        check.fail("methods", methods_raw, "a non-empty list of " + ", ".join(available_methods()))
    methods = tuple(check.choice(f"methods[{i}]", m, available_methods()) for i, m in enumerate(methods_raw))
    if len(set(methods)) != len(methods):
        check.fail("methods", methods_raw, "distinct methods")
    max_length = check.integer("max_length", merged["max_length"], 4, 128)
    answer_slots = check.integer("answer_slots", merged["answer_slots"], 1, 2)
    answer_choices = check.integer("answer_choices", merged["answer_choices"], 2, 16)
    needed = merged["reasoning_needed"]
    if (isinstance(needed, str) or not isinstance(needed, Sequence) or len(needed) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in needed)
            or needed[0] > needed[1]):
        check.fail("reasoning_needed", needed, "[low, high], integers with 0 ≤ low ≤ high")
    if needed[1] + answer_slots + 3 > max_length:
        check.fail("reasoning_needed", list(needed), f"a high end ≤ max_length − answer_slots − 3 = "
                                                     f"{max_length - answer_slots - 3} (a right answer must fit)")
    base_raw = merged["base"] or {}
    if not isinstance(base_raw, Mapping):
        check.fail("base", base_raw, "a mapping with keys " + ", ".join(_BASE_KEYS))
    check.unknown_keys(base_raw, _BASE_KEYS, prefix="base.")
    base_values = {**_BASE_DEFAULTS, **base_raw}
    base = BasePolicy(
        think_continue=check.number("base.think_continue", base_values["think_continue"], 0.0, 1.0, high_open=True),
        off_template=check.number("base.off_template", base_values["off_template"], 0.0, 1.0, high_open=True),
        answer_skill=check.number("base.answer_skill", base_values["answer_skill"], -10.0, 10.0),
        prompt_spread=check.number("base.prompt_spread", base_values["prompt_spread"], 0.0, 10.0),
    )
    rewards_raw = merged["rewards"]
    if isinstance(rewards_raw, str) or not isinstance(rewards_raw, Sequence) or not rewards_raw:
        check.fail("rewards", rewards_raw, "a non-empty list of reward definitions")
    rewards = tuple(_parse_reward(check, r, f"rewards[{i}]", max_length) for i, r in enumerate(rewards_raw))
    names = [r.name for r in rewards]
    if len(set(names)) != len(names):
        check.fail("rewards", names, "distinct reward names")

    def reward_name(key: str, value: Any) -> str:
        if value not in names:
            check.fail(key, value, "a reward name: " + ", ".join(names))
        return value

    conditioning = None
    if merged["conditioning"] is not None:
        raw = merged["conditioning"]
        if not isinstance(raw, Mapping):
            check.fail("conditioning", raw, "a mapping {easy, hard, threshold} or null")
        check.unknown_keys(raw, {"easy", "hard", "threshold"}, prefix="conditioning.")
        easy_raw = raw.get("easy")
        easy_list = [easy_raw] if isinstance(easy_raw, str) else list(easy_raw or [])
        if not easy_list:
            check.fail("conditioning.easy", easy_raw, "a reward name or a list of reward names")
        easy = tuple(reward_name("conditioning.easy", e) for e in easy_list)
        hard = reward_name("conditioning.hard", raw.get("hard"))
        if hard in easy:
            check.fail("conditioning.hard", hard, "a reward that is not also an easy (conditioned) reward")
        threshold = check.number("conditioning.threshold", raw.get("threshold", rewards[names.index(hard)].high))
        conditioning = ConditioningSpec(easy, hard, threshold)

    outcome = SequenceOutcome()
    if merged["outcome"] is not None:
        raw = merged["outcome"]
        if not isinstance(raw, Mapping):
            check.fail("outcome", raw, "a mapping {kind, reward} or null")
        check.unknown_keys(raw, {"kind", "reward"}, prefix="outcome.")
        kind = check.choice("outcome.kind", raw.get("kind"), SEQUENCE_OUTCOMES)
        reward = reward_name("outcome.reward", raw.get("reward")) if kind != "none" else ""
        outcome = SequenceOutcome(kind, reward)
    if not isinstance(merged["claims"], Sequence) or isinstance(merged["claims"], str):
        check.fail("claims", merged["claims"], "a list of claim ids such as [C4]")
    return SequenceRunConfig(
        seeds=seeds,
        steps=check.integer("steps", merged["steps"], 1, 1_000_000),
        prompts=check.integer("prompts", merged["prompts"], 1, 4096),
        generations=check.integer("generations", merged["generations"], 2, 1024),
        methods=methods,
        convention=check.choice("convention", merged["convention"], available_conventions()),
        optimizer=check.choice("optimizer", merged["optimizer"], OPTIMIZERS),
        learning_rate=check.number("learning_rate", merged["learning_rate"], 0.0, None, low_open=True),
        clip_epsilon=check.number("clip_epsilon", merged["clip_epsilon"], 0.0, None, low_open=True),
        inner_epochs=check.integer("inner_epochs", merged["inner_epochs"], 1, 100),
        loss=check.choice("loss", merged["loss"], LOSS_TYPES),
        max_length=max_length,
        answer_slots=answer_slots,
        answer_choices=answer_choices,
        reasoning_needed=(int(needed[0]), int(needed[1])),
        base=base,
        rewards=rewards,
        conditioning=conditioning,
        outcome=outcome,
    )


def _apply_overrides(check: _Checker, base: Mapping, overrides: Any) -> dict:
    if not isinstance(overrides, Mapping):
        check.fail("(variant)", overrides, "a mapping of keys to override")
    merged = copy.deepcopy(dict(base))
    for key, value in overrides.items():
        if key in _NOT_OVERRIDABLE or key not in _TOP_KEYS:
            allowed = sorted(set(_TOP_KEYS) - _NOT_OVERRIDABLE)
            raise ValueError(f"{check.path}{check.where}: key '{key}' cannot be set in a variant or grid; "
                             f"allowed keys: {', '.join(allowed)}.")
        if key == "base" and isinstance(value, Mapping):
            merged["base"] = {**(merged.get("base") or {}), **copy.deepcopy(dict(value))}
        elif key == "rewards" and isinstance(value, Mapping):
            by_name = {r.get("name"): r for r in merged.get("rewards", []) if isinstance(r, Mapping)}
            for name, patch in value.items():
                if name not in by_name or not isinstance(patch, Mapping):
                    check.fail(f"rewards.{name}", patch, "a mapping patching an existing reward: "
                                                        + ", ".join(map(str, by_name)))
                by_name[name].update(copy.deepcopy(dict(patch)))
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _label_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "..".join(_format_grid_value(v) for v in value)
    return _format_grid_value(value)


def _grid_label(key: str, value: Any) -> str:
    """``key=value`` of one grid coordinate: ``base.off_template=0.1`` for a patch of the base policy,
    ``correctness.range=0..1`` for a patch of a reward (``rewards: {correctness: {range: [0, 1]}}``),
    ``conditioning=length|correctness`` (easy|hard) or ``conditioning=none`` for the conditioning."""
    if value is None:
        return f"{key}=none"
    if key == "conditioning" and isinstance(value, Mapping):
        easy = value.get("easy")
        easy = "+".join(easy) if isinstance(easy, (list, tuple)) else easy
        return f"{key}={easy}|{value.get('hard')}"
    if key == "rewards" and isinstance(value, Mapping):
        parts = []
        for name, patch in value.items():
            if isinstance(patch, Mapping):
                parts += [f"{name}.{field}={_label_value(v)}" for field, v in patch.items()]
            else:  # not a patch: refused when the cell is resolved
                parts.append(f"{name}={patch}")
        return ",".join(parts)
    if isinstance(value, Mapping):
        return ",".join(f"{key}.{k}={_format_grid_value(v)}" for k, v in value.items())
    return f"{key}={_format_grid_value(value)}"


def parse_sequence_study(data: Mapping, path: str = "<study>"):
    """Validate a ``bench: sequence`` study mapping; returns a :class:`gdpo.sim.config.Study` whose variants are
    :class:`SequenceRunConfig`. A grid's variant names are ``key=value,...`` in grid order."""
    return build_study(data, path, _Checker(path), top_keys=_TOP_KEYS, not_overridable=_NOT_OVERRIDABLE,
                       resolve=_resolve, apply_overrides=_apply_overrides, grid_label=_grid_label)


__all__ = ["BasePolicy", "SequenceOutcome", "SequenceRewardSpec", "SequenceRunConfig", "parse_sequence_study"]
