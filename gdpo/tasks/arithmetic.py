"""A small built-in two-reward task: integer arithmetic with a required answer format.

Used to exercise training end to end at smoke scale (and as a fast sanity task at mini scale) until
the paper's task families are in the workflow. Two binary rewards, as in the paper's toy setting:

- ``format``: the completion contains exactly one ``<answer>…</answer>`` block, and nothing after it;
- ``correct``: the text inside that block is the right integer.

Both read the text in time linear in its length; a message whose content is None reads as empty text.

Problems are generated from a seed (``random.Random``), so splits with different seeds are disjoint in
practice and every run sees the same data.
"""

from __future__ import annotations

import random
import re

from datasets import Dataset

SYSTEM_PROMPT = "Solve the problem. Give the final answer as an integer inside <answer></answer>."
_OPEN, _CLOSE = "<answer>", "</answer>"
_AFTER_EQUALS = re.compile(r"=\s*(-?\d+)")


def make_problem(rng: random.Random, max_operand: int = 20) -> tuple[str, int]:
    """One problem ``a op b`` with op in {+, −, ×}; returns (question, answer)."""
    a, b = rng.randint(0, max_operand), rng.randint(0, max_operand)
    op = rng.choice("+-*")
    answer = a + b if op == "+" else a - b if op == "-" else a * b
    return f"What is {a} {op} {b}?", answer


#: Problems generated when no size is given.
DEFAULT_SIZE = 256


def build_dataset(split: str, size: int | None, seed: int, length_limit: int = 64) -> Dataset:
    """``size`` problems (None: :data:`DEFAULT_SIZE`); ``split`` ("train" or "eval") is mixed into the seed so
    the two never coincide.

    Columns: ``prompt`` (chat messages), ``answer`` (int as str), ``length_limit`` (tokens, for ``length``).
    """
    if split not in ("train", "eval"):
        raise ValueError(f"split must be 'train' or 'eval', got {split!r}.")
    rng = random.Random(f"arithmetic-{split}-{seed}")
    rows = {"prompt": [], "answer": [], "length_limit": []}
    for _ in range(DEFAULT_SIZE if size is None else size):
        question, answer = make_problem(rng)
        rows["prompt"].append([{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}])
        rows["answer"].append(str(answer))
        rows["length_limit"].append(length_limit)
    return Dataset.from_dict(rows)


def _text(completion) -> str:
    """TRL passes conversational completions as ``[{"role": "assistant", "content": …}]``; a message whose
    content is None or missing, or a None completion, reads as empty text."""
    if isinstance(completion, list):
        return "".join(message.get("content") or "" for message in completion)
    return completion or ""


def answer_blocks(text: str, limit: int | None = None) -> list[str]:
    """The contents of the ``<answer>…</answer>`` blocks of ``text``, left to right (at most ``limit``): each
    opening tag with the first closing tag after it, as a lazy ``<answer>(.*?)</answer>`` finds them, in time
    linear in the text (the pattern rescans the rest of the text from every unclosed opening tag)."""
    blocks, position = [], 0
    while limit is None or len(blocks) < limit:
        start = text.find(_OPEN, position)
        if start < 0:
            break
        end = text.find(_CLOSE, start + len(_OPEN))
        if end < 0:  # no later opening tag has a closing tag after it either
            break
        blocks.append(text[start + len(_OPEN) : end])
        position = end + len(_CLOSE)
    return blocks


def format_reward(completions, **kwargs) -> list[float]:
    """1 if the completion has exactly one ``<answer>…</answer>`` block and nothing after it, else 0."""
    rewards = []
    for completion in completions:
        text = _text(completion).strip()
        blocks = answer_blocks(text, limit=2)
        rewards.append(1.0 if len(blocks) == 1 and text.endswith("</answer>") else 0.0)
    return rewards


def extract_answer(text: str) -> str | None:
    """The stated answer: the first ``<answer>`` block, else the first integer after an ``=`` sign.

    The fallback accepts the ``a + b = c`` form small instruct models answer in before they learn the tags.
    """
    blocks = answer_blocks(text, limit=1)
    if blocks:
        return blocks[0].strip()
    match = _AFTER_EQUALS.search(text)
    return match.group(1) if match else None


def correct_reward(completions, answer, **kwargs) -> list[float]:
    """1 if the stated answer (:func:`extract_answer`) is the right integer, else 0."""
    return [1.0 if extract_answer(_text(c)) == str(expected) else 0.0 for c, expected in zip(completions, answer)]


def length_reward(completions, completion_ids, length_limit, **kwargs) -> list[float]:
    """1 if the completion has at most ``length_limit`` tokens, else 0."""
    return [1.0 if len(ids) <= limit else 0.0 for ids, limit in zip(completion_ids, length_limit)]


#: Reward name → function, in the order their weights are given.
REWARD_FUNCTIONS = {"correct": correct_reward, "format": format_reward, "length": length_reward}


def evaluate(request) -> dict:
    """Accuracy, format and length on ``request.eval_size`` held-out problems (default 64), in percent.

    Returns eval.json content (:mod:`gdpo.evaluation`) with one benchmark ``arithmetic``: ``acc``
    (correct answers), ``format`` (format reward 1) and ``exceed`` (completions over ``length_limit`` tokens),
    each averaged over every sample of every problem. Completions go to ``work_dir/completions.jsonl``.
    ``items`` (:func:`gdpo.files.item_outcomes`) keeps each problem's per-sample ``acc``, ``format`` and
    ``exceed``; the problems are drawn from the evaluation seed, so an id (``"<seed>/<index>"``) pairs only
    runs evaluated with the same seed.
    """
    import json

    from gdpo.files import ITEMS_KEY, item_outcomes
    from gdpo.generation.generate import generate_for_request, load_policy_for_request
    from gdpo.generation.health import TRUNCATED, health_record

    options = dict(request.options)
    length_limit = options.pop("length_limit", 64)
    if options:
        raise ValueError(f"arithmetic task: unknown options {sorted(options)}; it takes only length_limit.")
    dataset = build_dataset("eval", request.eval_size or 64, request.seed, length_limit=length_limit)
    model, tokenizer, device = load_policy_for_request(request)
    samples = generate_for_request(model, tokenizer, dataset["prompt"], request)
    correct, formatted, exceeded = [], [], []
    per_item = {"acc": [], "format": [], "exceed": []}
    with open(request.work_dir / "completions.jsonl", "w", encoding="utf-8") as out:
        for row, completions in zip(dataset, samples):
            texts = [c.text for c in completions]
            item_correct = correct_reward(texts, [row["answer"]] * len(texts))
            item_format = format_reward(texts)
            item_exceed = [1.0 if c.num_tokens > length_limit else 0.0 for c in completions]
            correct += item_correct
            formatted += item_format
            exceeded += item_exceed
            for metric, values in zip(per_item, (item_correct, item_format, item_exceed)):
                per_item[metric].append(values)
            record = {"answer": row["answer"], "samples": texts, "num_tokens": [c.num_tokens for c in completions],
                      "correct": item_correct, "format": item_format}
            out.write(json.dumps(record) + "\n")

    def percent(values: list[float]) -> float:
        return round(100.0 * sum(values) / len(values), 2)

    metrics = {"acc": percent(correct), "format": percent(formatted), "exceed": percent(exceeded),
               "n_items": len(dataset)}
    every = [c for completions in samples for c in completions]
    health = {"answers": percent([1.0 if answer_blocks(c.text, limit=1) else 0.0 for c in every]),
              TRUNCATED: percent([1.0 if c.truncated else 0.0 for c in every])}
    return {"family": "arithmetic", "benchmarks": {"arithmetic": metrics}, "summary": dict(metrics), "not_run": {},
            "health": health_record("arithmetic", health),
            "settings": {"length_limit": length_limit, **device.record()},
            ITEMS_KEY: {"arithmetic": item_outcomes([f"{request.seed}/{index}" for index in range(len(dataset))],
                                                    per_item)}}
