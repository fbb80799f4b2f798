"""The training loop's options beyond TRL's, as a config states them (no torch: planning checks them).

The paper trained with verl; three of verl's loop settings have no TRL equivalent and are the suite's own
keys of a config's ``training:`` section (:func:`loop_options_from_training` takes them out before the rest
goes to ``trl.GRPOConfig``; :mod:`gdpo.training.loop` computes them, :class:`gdpo.training.trainer.
RegistryGRPOTrainer` runs them):

- ``dynamic_sampling``: DAPO's "filter groups" (verl ``algorithm.filter_groups``). After scoring, a group whose
  rollouts carry no training signal under the chosen ``metric`` is dropped, and further prompts are generated
  and scored until the batch holds as many groups with signal as one generation batch, for at most
  ``max_rounds`` generation rounds per step (verl's ``max_num_gen_batches``). ``true`` takes the defaults.
  Metrics (:data:`FILTER_METRICS`, or a reward's name, verl's ``acc``):

  - ``reward_sum``: the weighted sum of the rewards (verl's ``seq_reward``, the score GRPO normalises);
  - ``each_reward``: every reward with a non-zero weight on its own, a group being silent only when each of
    them is constant in it (what GDPO's per-reward normalisation needs: a group constant in the sum but not
    in every reward still has a GDPO advantage when the weights differ or there are three rewards or more);
  - ``auto`` (default): ``each_reward`` for a method that normalises each reward (the GDPO family),
    ``reward_sum`` for the others.

  At the cap the step trains on the groups with signal it has, the rest of the batch filled with silent
  groups of its first round (their advantage is what it would be without dynamic sampling), and its record
  says how many (``dynamic_sampling/groups_filled_silent``); verl stops the run with an error there instead.
- ``kl_estimator``: the per-token KL estimate (Schulman's k1/k2/k3, verl's ``kl``/``mse``/``low_var_kl``):
  ``k3`` (TRL's, the default), ``k2`` = ½(log π − log π_ref)² (the paper's math and code runs), ``k1`` =
  log π − log π_ref (only in the reward: its gradient in the loss is zero in expectation).
- ``kl_in_reward``: the KL goes into the reward, as verl's ``algorithm.use_kl_in_reward`` (the paper's tool
  calling): each rollout's summed reward is lowered by β Σ_t KL_t (the policy's log-probabilities at
  generation against the reference's) before the advantage, instead of β·KL being a loss term. As in verl and
  the NVlabs verl fork, a method that normalises each reward normalises the rewards without it: for the GDPO
  family the option only records the KL.

β is TRL's ``beta`` (``training.beta``) in every case.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "FILTER_METRICS",
    "KL_ESTIMATORS",
    "LOOP_KEYS",
    "DynamicSampling",
    "LoopOptions",
    "loop_options_from_training",
]

#: The config keys of ``training:`` that are the loop's, not TRL's.
LOOP_KEYS = ("dynamic_sampling", "kl_estimator", "kl_in_reward")
#: KL estimators by Schulman's names; verl's names for them.
KL_ESTIMATORS = {"k1": "kl", "k2": "mse", "k3": "low_var_kl"}
#: Dynamic sampling's metrics besides a reward's own name.
FILTER_METRICS = ("auto", "reward_sum", "each_reward")
#: verl's DAPO recipe caps generation batches per step at 10 (its config default, 0, means no cap).
DEFAULT_MAX_ROUNDS = 10


@dataclasses.dataclass(frozen=True)
class DynamicSampling:
    """Dynamic sampling's settings.

    Attributes:
        metric: :data:`FILTER_METRICS` or a reward's name (checked against the run's rewards by
            :meth:`LoopOptions.check`).
        max_rounds: generation rounds per step at most, the first included (≥ 1; 1 filters nothing).
    """

    metric: str = "auto"
    max_rounds: int = DEFAULT_MAX_ROUNDS

    def resolved_metric(self, normalises_each_reward: bool) -> str:
        """The metric a run uses: ``auto`` becomes ``each_reward`` for the GDPO family, else ``reward_sum``."""
        if self.metric != "auto":
            return self.metric
        return "each_reward" if normalises_each_reward else "reward_sum"


@dataclasses.dataclass(frozen=True)
class LoopOptions:
    """The loop's options of one run (defaults: TRL's loop unchanged).

    Attributes:
        dynamic_sampling: None (off) or its settings.
        kl_estimator: ``k1``, ``k2`` or ``k3``.
        kl_in_reward: the KL penalises the reward instead of being a loss term.
    """

    dynamic_sampling: DynamicSampling | None = None
    kl_estimator: str = "k3"
    kl_in_reward: bool = False

    @classmethod
    def from_config(cls, values: Mapping[str, Any] | None, where: str = "training") -> LoopOptions:
        """Options from the keys of :data:`LOOP_KEYS` a config sets (None or {}: the defaults); ``ValueError``
        naming the key and the fix for any other key or a bad value."""
        values = dict(values or {})
        unknown = sorted(set(values) - set(LOOP_KEYS))
        if unknown:
            raise ValueError(f"{where}: {unknown} are not training-loop options; they are {', '.join(LOOP_KEYS)}.")
        sampling = values.get("dynamic_sampling", False)
        if sampling is True:
            sampling = DynamicSampling()
        elif sampling is False or sampling is None:
            sampling = None
        elif isinstance(sampling, Mapping):
            extra = sorted(set(sampling) - {"metric", "max_rounds"})
            if extra:
                raise ValueError(f"{where}.dynamic_sampling: unknown keys {extra}; it takes metric and max_rounds.")
            metric = sampling.get("metric", "auto")
            rounds = sampling.get("max_rounds", DEFAULT_MAX_ROUNDS)
            if not isinstance(metric, str) or not metric:
                raise ValueError(f"{where}.dynamic_sampling.metric {metric!r} must be one of "
                                 f"{', '.join(FILTER_METRICS)} or a reward's name.")
            if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
                raise ValueError(f"{where}.dynamic_sampling.max_rounds {rounds!r} must be an integer ≥ 1 (generation "
                                 "rounds per step, the first included).")
            sampling = DynamicSampling(metric, rounds)
        else:
            raise ValueError(f"{where}.dynamic_sampling must be true, false or a mapping with metric and max_rounds, "
                             f"got {sampling!r}.")
        estimator = values.get("kl_estimator", "k3")
        if estimator not in KL_ESTIMATORS:
            raise ValueError(f"{where}.kl_estimator {estimator!r} is not one of {', '.join(KL_ESTIMATORS)} "
                             "(k2 is verl's mse, k3 its low_var_kl and TRL's).")
        in_reward = values.get("kl_in_reward", False)
        if not isinstance(in_reward, bool):
            raise ValueError(f"{where}.kl_in_reward must be true or false, got {in_reward!r}.")  # noqa: TRY004
        if estimator == "k1" and not in_reward:
            raise ValueError(f"{where}.kl_estimator k1 is an estimator for the reward only (log π − log π_ref has a "
                             "zero expected gradient as a loss term); set `kl_in_reward: true`, or k2/k3 in the loss.")
        return cls(sampling, estimator, in_reward)

    @property
    def changes_the_kl(self) -> bool:
        """The KL is not TRL's k3 loss term (another estimator, or in the reward)."""
        return self.kl_in_reward or self.kl_estimator != "k3"

    def check(self, where: str, reward_names: Sequence[str], beta: Any) -> None:
        """``ValueError`` when the options do not fit the run: a filter metric that names no reward of it, or a
        KL option without a KL coefficient (``training.beta``)."""
        if self.dynamic_sampling is not None:
            metric = self.dynamic_sampling.metric
            if metric not in FILTER_METRICS and metric not in reward_names:
                raise ValueError(f"{where}: dynamic_sampling.metric {metric!r} is neither one of "
                                 f"{', '.join(FILTER_METRICS)} nor a reward of the run ({', '.join(reward_names)}).")
        if self.changes_the_kl and not (isinstance(beta, (int, float)) and not isinstance(beta, bool) and beta > 0):
            what = "kl_in_reward" if self.kl_in_reward else f"kl_estimator {self.kl_estimator}"
            raise ValueError(f"{where}: {what} needs a KL coefficient; set `training.beta:` (β > 0), or remove it.")

    def to_dict(self) -> dict:
        """The config's form (``dynamic_sampling`` as a mapping or false)."""
        sampling = dataclasses.asdict(self.dynamic_sampling) if self.dynamic_sampling is not None else False
        return {"dynamic_sampling": sampling, "kl_estimator": self.kl_estimator, "kl_in_reward": self.kl_in_reward}


def loop_options_from_training(training: dict) -> dict | None:
    """Take the loop's keys (:data:`LOOP_KEYS`) out of a ``training:`` mapping (changed in place) and return
    them, or None when it sets none."""
    taken = {key: training.pop(key) for key in LOOP_KEYS if key in training}
    return taken or None
