"""Write ``tests/data/verl_loop_vectors.json``: verl's own functions evaluated on shared inputs, for
``tests/test_loop_options.py``.

Run it in an environment with verl (CPU torch is enough; verl's Ray trainer module imports what is listed):

    python -m venv venv-verl
    venv-verl/bin/pip install torch==2.13.0 numpy omegaconf hydra-core "tensordict>=0.8,<=0.10,!=0.9.0" \
        torchdata codetiming ray "transformers>=5.5.3,<5.11,!=5.6.0" datasets pillow peft cachetools uvicorn fastapi
    venv-verl/bin/pip install --no-deps verl==0.9.1
    venv-verl/bin/python tests/data/make_verl_loop_vectors.py

What it evaluates (verl 0.9.1, the PyPI release of verl-project/verl):

- ``verl.trainer.ppo.core_algos.kl_penalty`` with ``kl`` (k1), ``mse`` (k2) and ``low_var_kl`` (k3), on
  log-probabilities that reach its clamps;
- ``verl.trainer.ppo.ray_trainer.apply_kl_penalty`` (``algorithm.use_kl_in_reward``) followed by
  ``core_algos.compute_grpo_outcome_advantage``: GRPO's advantage of a KL-penalised reward;
- ``core_algos.compute_gdpo_outcome_advantage`` with ``gdpo_reward_keys`` on the same KL-penalised batch
  (verl's GDPO reads the per-reward scores, so the penalty does not reach it);
- ``core_algos.agg_loss`` of the k2 estimate with ``token-mean`` and ``seq-mean-token-mean`` (the KL loss
  term's reduction: ``actor.kl_loss_type=mse``).

The inputs are drawn from a fixed seed and stored beside the outputs, so the test needs no verl.
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import numpy as np
import torch
from omegaconf import OmegaConf
from verl import DataProto
from verl.trainer.ppo import core_algos
from verl.trainer.ppo.ray_trainer import apply_kl_penalty

OUT = Path(__file__).with_name("verl_loop_vectors.json")


def _batch(generator: torch.Generator, rows: int, width: int, spread: float) -> dict:
    """Log-probabilities of a policy and a reference, and a right-padded response mask (every row ≥ 1 token)."""
    log_probs = -torch.rand(rows, width, generator=generator, dtype=torch.float64) * 3
    ref_log_probs = log_probs + torch.randn(rows, width, generator=generator, dtype=torch.float64) * spread
    lengths = torch.randint(1, width + 1, (rows,), generator=generator)
    mask = (torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)).to(torch.float64)
    return {"log_probs": log_probs, "ref_log_probs": ref_log_probs, "mask": mask, "lengths": lengths}


def kl_cases(generator: torch.Generator) -> list[dict]:
    cases = []
    for spread in (0.1, 2.0, 30.0):  # 30: log-ratios beyond verl's ±20 clamp and estimates beyond ±10
        batch = _batch(generator, 4, 6, spread)
        outputs = {name: core_algos.kl_penalty(batch["log_probs"], batch["ref_log_probs"], kl_penalty=name).tolist()
                   for name in ("kl", "mse", "low_var_kl")}
        cases.append({"spread": spread, "log_probs": batch["log_probs"].tolist(),
                      "ref_log_probs": batch["ref_log_probs"].tolist(), "verl": outputs})
    return cases


def in_reward_cases(generator: torch.Generator) -> list[dict]:
    """GRPO and GDPO advantages of verl's in-reward KL: 3 groups of 4, two rewards whose sum is verl's score."""
    cases = []
    for kl_penalty, beta in (("kl", 0.001), ("kl", 0.5), ("mse", 0.2), ("low_var_kl", 0.2)):
        rows, width, group = 12, 7, 4
        batch = _batch(generator, rows, width, 1.0)
        correct = torch.randint(0, 2, (rows,), generator=generator).to(torch.float64)
        fmt = torch.randint(0, 2, (rows,), generator=generator).to(torch.float64)
        correct[:group] = 1.0  # a group where both rewards tie: only the KL tells its rollouts apart
        fmt[:group] = 0.0
        score = correct + fmt
        last = batch["lengths"] - 1
        scores = torch.zeros(rows, width, dtype=torch.float64)
        scores[torch.arange(rows), last] = score
        prompt_length = 3
        attention = torch.cat([torch.ones(rows, prompt_length, dtype=torch.float64), batch["mask"]], dim=1)
        data = DataProto.from_dict(tensors={
            "token_level_scores": scores.float(), "old_log_probs": batch["log_probs"].float(),
            "ref_log_prob": batch["ref_log_probs"].float(), "response_mask": batch["mask"].float(),
            "prompts": torch.zeros(rows, prompt_length, dtype=torch.long), "attention_mask": attention.long(),
        })
        controller = core_algos.FixedKLController(kl_coef=beta)
        data, metrics = apply_kl_penalty(data, kl_ctrl=controller, kl_penalty=kl_penalty)
        index = np.array([f"prompt{i // group}" for i in range(rows)], dtype=object)
        grpo, _ = core_algos.compute_grpo_outcome_advantage(
            token_level_rewards=data.batch["token_level_rewards"], response_mask=data.batch["response_mask"],
            index=index)
        config = OmegaConf.create({"gdpo_reward_keys": ["correct", "format"]})
        gdpo, _ = core_algos.compute_gdpo_outcome_advantage(
            token_level_rewards=data.batch["token_level_rewards"], response_mask=data.batch["response_mask"],
            index=index, config=config,
            non_tensor_batch={"correct": correct.numpy(), "format": fmt.numpy()},
            batch={"prompts": data.batch["prompts"], "attention_mask": data.batch["attention_mask"]})
        cases.append({
            "kl_penalty": kl_penalty, "beta": beta, "num_generations": group,
            "log_probs": data.batch["old_log_probs"].double().tolist(),
            "ref_log_probs": data.batch["ref_log_prob"].double().tolist(),
            "mask": batch["mask"].tolist(), "rewards": {"correct": correct.tolist(), "format": fmt.tolist()},
            "verl": {"token_level_rewards": data.batch["token_level_rewards"].double().tolist(),
                     "reward_kl_penalty": metrics["actor/reward_kl_penalty"],
                     "grpo_advantages": grpo[:, 0].double().tolist(),
                     "gdpo_advantages": gdpo[:, 0].double().tolist()},
        })
    return cases


def kl_loss_cases(generator: torch.Generator) -> list[dict]:
    cases = []
    for _ in range(2):
        batch = _batch(generator, 5, 6, 0.5)
        kld = core_algos.kl_penalty(batch["log_probs"], batch["ref_log_probs"], kl_penalty="mse")
        reduced = {mode: core_algos.agg_loss(loss_mat=kld, loss_mask=batch["mask"], loss_agg_mode=mode).item()
                   for mode in ("token-mean", "seq-mean-token-mean")}
        cases.append({"log_probs": batch["log_probs"].tolist(), "ref_log_probs": batch["ref_log_probs"].tolist(),
                      "mask": batch["mask"].tolist(), "verl": reduced})
    return cases


def main() -> None:
    generator = torch.Generator().manual_seed(20260101)
    record = {
        "source": f"verl {importlib.metadata.version('verl')} (PyPI), torch {torch.__version__}; "
                  "tests/data/make_verl_loop_vectors.py",
        "kl_penalty": kl_cases(generator),
        "kl_in_reward": in_reward_cases(generator),
        "kl_loss": kl_loss_cases(generator),
    }
    OUT.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
