"""Worked reference solutions of the math family (its warm-up data): right, paid by the family's own reward,
and absent where the problem is not a sum this module understands."""

from __future__ import annotations

import pytest

from gdpo.plan import WarmupSettings
from gdpo.tasks.math import REWARD_FUNCTIONS, build_dataset, reference_completion
from gdpo.tasks.math.worked import running_totals, worked_solution
from gdpo.training.warmup import warmup_dataset

CHAIN = "State the final answer to the following arithmetic problem: 3 - 8 - 9 - 3 ="


def test_running_totals_left_to_right_with_negative_partial_sums():
    assert worked_solution(CHAIN, "-17") == "3 - 8 = -5\n-5 - 9 = -14\n-14 - 3 = -17\nThe final answer is \\boxed{-17}."
    assert running_totals("-4 + 9") == [(-4, "+", 9, 5)]
    assert worked_solution("Calculate 7 - 9.", "-2") == "7 - 9 = -2\nThe final answer is \\boxed{-2}."


@pytest.mark.parametrize("problem, answer", [
    (CHAIN, "-16"),                                   # a gold answer the sum does not give: no reference
    ("Find the GCD of 12 and 18.", "6"),              # no sum in the problem
    ("Calculate 7 * 3 + 1.", "22"),                   # another operator: not worked left to right here
    ("Calculate 2 + 3 * 4.", "14"),
])
def test_problems_it_does_not_understand_get_no_reference(problem, answer):
    assert worked_solution(problem, answer) is None


@pytest.mark.parametrize("generators", [["chain_sum_4"], ["chain_sum", "basic_arithmetic", "chain_sum_3"]])
def test_every_sum_item_gets_a_reference_the_correctness_reward_pays(generators):
    rows = build_dataset("train", 24, 0, train_data="reasoning_gym", generators=generators, length_limit=64)
    answers = [reference_completion(row) for row in rows]
    assert all(answers)
    columns = {k: rows[k] for k in ("answer", "verifier", "verifier_data", "length_limit")}
    assert REWARD_FUNCTIONS["correct"](answers, **columns) == [1.0] * len(rows)


def test_warmup_data_of_a_mix_keeps_only_the_worked_items():
    settings = WarmupSettings(task="math", family="math", train_size=16,
                              options={"train_data": "reasoning_gym", "generators": ["chain_sum_4", "gcd"],
                                       "length_limit": 64})
    data = warmup_dataset(settings)
    assert len(data) == 8  # the gcd half has no worked solution
    assert all("\\boxed{" in completion[0]["content"] for completion in data["completion"])
