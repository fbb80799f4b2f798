"""Token layout, step-0 policy and rewards of the sequence bench: every reward is read from the sampled sequence.

Vocabulary (V = 4 + 2K tokens, K = ``answer_choices``):

=========  ===========  ==========================================================
id         token        role
=========  ===========  ==========================================================
0          END          ends the response (a response without it is truncated at the cap)
1          THINK        one reasoning step
2          OPEN         opens the answer (a tool call, a boxed answer, a code block)
3          CLOSE        closes it
4..3+K     NAME_k       first answer slot (a tool name, a math answer)
4+K..3+2K  VALUE_k      second answer slot (a tool argument), used when ``answer_slots`` = 2
=========  ===========  ==========================================================

The template a well-formatted response follows: ``THINK+ OPEN NAME [VALUE] CLOSE END``. Prompt p has a right
answer (one NAME, and one VALUE with two slots) and needs ``need[p]`` reasoning tokens before its answer.

The *answer* of a response is what lies between its first OPEN and the first CLOSE after it (unparsable
when either is missing). Rewards (graded value v ∈ [0, 1] → paid ``low + (high − low)·v``):

- ``correctness``: ``binary`` v = 1 iff the answer is exactly the right one and at least ``need[p]`` THINK
  tokens precede the OPEN; ``fraction`` v = (right slots) / max(slots, answer length), times the same
  reasoning condition; ``ranged`` the fraction mapped onto ``range`` — ToolRL's ``6·S/S_max − 3``: exact →
  3, no parsable call → −3.
- ``format``: v = 1 iff the whole response is the template (at least one THINK, each tag once, the answer
  slots filled by answer tokens of the right kind, END right after CLOSE, not truncated).
- ``length``: v = 1 iff the response has at most ``limit`` tokens (END counted; a truncated response has the
  cap's length), the paper's math length reward.
- ``no_bug``: v = 1 iff the response is not truncated and any opened answer is closed and holds only answer
  tokens (the code study's "runs without error").

One completion earns every reward, so the rewards are coupled the way a real completion couples them: a
correct tool call needs the tags that format also needs; hard prompts need long reasoning, which the length
limit punishes.
"""

from __future__ import annotations

import dataclasses
import statistics

import numpy as np
import torch

from gdpo.sim.schema import SequenceRunConfig

END, THINK, OPEN, CLOSE = 0, 1, 2, 3
FIRST_ANSWER_TOKEN = 4
#: Fixed seed of the prompts' right answers, reasoning needs and difficulty order (the same in every run).
PROMPT_SEED = 20260106


def vocabulary_size(answer_choices: int) -> int:
    """V = 4 + 2K."""
    return FIRST_ANSWER_TOKEN + 2 * answer_choices


@dataclasses.dataclass(frozen=True)
class Prompts:
    """The prompt pool: ``answers`` (P, slots) right token ids; ``need`` (P,) reasoning tokens needed;
    ``skill`` (P,) step-0 logit bonus of the right answer tokens."""

    answers: torch.Tensor
    need: torch.Tensor
    skill: torch.Tensor


def make_prompts(config: SequenceRunConfig) -> Prompts:
    """Right answers, reasoning needs (evenly spread over ``reasoning_needed``) and difficulty of the P prompts;
    deterministic, independent of the run's seeds."""
    count, choices = config.prompts, config.answer_choices
    generator = np.random.default_rng(PROMPT_SEED)
    names = FIRST_ANSWER_TOKEN + generator.integers(0, choices, size=count)
    values = FIRST_ANSWER_TOKEN + choices + generator.integers(0, choices, size=count)
    answers = np.stack([names, values], axis=1)[:, :config.answer_slots]
    low, high = config.reasoning_needed
    need = low + np.floor((high - low + 1) * (generator.permutation(count) + 0.5) / count).astype(int)
    need = np.minimum(need, high)
    normal = statistics.NormalDist()
    quantiles = np.array([normal.inv_cdf((p + 0.5) / count) for p in range(count)])
    skill = config.base.answer_skill + config.base.prompt_spread * generator.permutation(quantiles)
    return Prompts(torch.as_tensor(answers, dtype=torch.int64), torch.as_tensor(need, dtype=torch.int64),
                   torch.as_tensor(skill, dtype=torch.float64))


def base_logits(config: SequenceRunConfig, prompts: Prompts) -> torch.Tensor:
    """(P, V + 1, V) float64 step-0 logits of the next token given the previous one (row V: the start).

    Template transitions: start → THINK; THINK → THINK with ``think_continue``, else OPEN; OPEN → a NAME;
    NAME → a VALUE (two slots) or CLOSE; VALUE → CLOSE; CLOSE → END; END → END. Answer tokens are uniform
    except the prompt's right one, whose logit carries the prompt's ``skill`` bonus. Every state then mixes
    in ``off_template`` spread uniformly over all V tokens (the base model's format noise).
    """
    choices, slots = config.answer_choices, config.answer_slots
    size = vocabulary_size(choices)
    names = list(range(FIRST_ANSWER_TOKEN, FIRST_ANSWER_TOKEN + choices))
    values = list(range(FIRST_ANSWER_TOKEN + choices, FIRST_ANSWER_TOKEN + 2 * choices))
    template = torch.zeros(size + 1, size, dtype=torch.float64)
    template[size, THINK] = 1.0
    template[THINK, THINK] = config.base.think_continue
    template[THINK, OPEN] = 1 - config.base.think_continue
    template[OPEN, names] = 1.0 / choices
    for name in names:
        if slots == 2:
            template[name, values] = 1.0 / choices
        else:
            template[name, CLOSE] = 1.0
    for value in values:
        template[value, CLOSE] = 1.0
    template[CLOSE, END] = 1.0
    template[END, END] = 1.0
    noise = config.base.off_template
    probabilities = (1 - noise) * template + noise / size
    logits = probabilities.log().expand(config.prompts, -1, -1).clone()
    prompt_index = torch.arange(config.prompts)
    logits[prompt_index, OPEN, prompts.answers[:, 0]] += prompts.skill
    if slots == 2:
        for name in names:
            logits[prompt_index, name, prompts.answers[:, 1]] += prompts.skill
    return logits


@dataclasses.dataclass(frozen=True)
class ParsedResponses:
    """What the rewards read from a batch of responses; every field (...,) over the leading axes.

    ``length``: tokens in the response (END counted; the cap if truncated); ``truncated``: no END;
    ``opened``: an OPEN; ``parsed``: an OPEN with a CLOSE after it; ``answer_length``: tokens between them (0 if unparsed);
    ``right_slots``: slots holding the right token; ``answer_tokens_ok``: every answer token is an answer token
    of its slot's kind; ``think_before``: THINK tokens before the first OPEN (all THINK tokens if none);
    ``only_think_before``: nothing but THINK before the first OPEN.
    """

    length: torch.Tensor
    truncated: torch.Tensor
    opened: torch.Tensor
    parsed: torch.Tensor
    answer_length: torch.Tensor
    right_slots: torch.Tensor
    answer_tokens_ok: torch.Tensor
    think_before: torch.Tensor
    only_think_before: torch.Tensor
    closes_then_ends: torch.Tensor


def parse_responses(tokens: torch.Tensor, in_response: torch.Tensor, answers: torch.Tensor,
                    answer_choices: int) -> ParsedResponses:
    """Parse responses.

    Args:
        tokens: (S, P, G, T) int64 token ids (anything after the response is ignored).
        in_response: (S, P, G, T) bool, True on the response's tokens (up to and including END).
        answers: (P, slots) the prompts' right tokens.
        answer_choices: K.
    """
    cap = tokens.shape[-1]
    slots = answers.shape[1]
    position = torch.arange(cap)
    length = in_response.sum(-1)
    ended = ((tokens == END) & in_response).any(-1)
    is_open = (tokens == OPEN) & in_response
    has_open = is_open.any(-1)
    first_open = torch.where(has_open, is_open.to(torch.int8).argmax(-1), torch.full_like(length, cap))
    is_close = (tokens == CLOSE) & in_response & (position > first_open[..., None])
    has_close = is_close.any(-1)
    first_close = torch.where(has_close, is_close.to(torch.int8).argmax(-1), torch.full_like(length, cap))
    parsed = has_open & has_close
    answer_length = torch.where(parsed, first_close - first_open - 1, torch.zeros_like(length))
    right = torch.zeros_like(length)
    inside = (position > first_open[..., None]) & (position < first_close[..., None]) & parsed[..., None]
    is_answer_token = tokens >= FIRST_ANSWER_TOKEN
    kind_ok = ~(inside & ~is_answer_token).any(-1)
    for slot in range(slots):
        index = (first_open + 1 + slot).clamp(max=cap - 1)
        token = tokens.gather(-1, index[..., None])[..., 0]
        present = parsed & (answer_length > slot)
        right = right + (present & (token == answers[None, :, None, slot])).to(right.dtype)
        low = FIRST_ANSWER_TOKEN + slot * answer_choices
        kind_ok = kind_ok & (~present | ((token >= low) & (token < low + answer_choices)))
    before = position < first_open[..., None]
    think = (tokens == THINK) & in_response
    think_before = (think & before).sum(-1)
    only_think_before = think_before == torch.minimum(first_open, length)
    after_close = (first_close + 1).clamp(max=cap - 1)
    closes_then_ends = parsed & (tokens.gather(-1, after_close[..., None])[..., 0] == END) & (first_close + 1 < cap)
    closes_then_ends &= length == first_close + 2
    return ParsedResponses(length, ~ended, has_open, parsed, answer_length, right, kind_ok, think_before, only_think_before,
                           closes_then_ends)


def graded_rewards(parsed: ParsedResponses, config: SequenceRunConfig, need: torch.Tensor) -> torch.Tensor:
    """(S, P, G, n) float64 graded values in [0, 1] of each reward (see the module docstring).

    Args:
        parsed: from :func:`parse_responses`; need: (P,) reasoning tokens each prompt needs.
    """
    slots = config.answer_slots
    reasoned = parsed.think_before >= need[None, :, None]
    exact = parsed.parsed & (parsed.answer_length == slots) & (parsed.right_slots == slots)
    fraction = parsed.right_slots / torch.clamp(parsed.answer_length, min=slots)
    columns = []
    for spec in config.rewards:
        if spec.kind == "correctness":
            value = (exact if spec.scale == "binary" else fraction) * reasoned
        elif spec.kind == "format":
            value = (parsed.parsed & parsed.only_think_before & (parsed.think_before >= 1)
                     & (parsed.answer_length == slots) & parsed.answer_tokens_ok & parsed.closes_then_ends
                     & ~parsed.truncated)
        elif spec.kind == "length":
            value = parsed.length <= spec.limit
        elif spec.kind == "no_bug":
            value = ~parsed.truncated & parsed.answer_tokens_ok & ~(parsed.opened & ~parsed.parsed)
        else:  # pragma: no cover - the config refuses other kinds
            raise ValueError(f"unknown reward kind {spec.kind!r}")
        columns.append(value.to(torch.float64))
    return torch.stack(columns, dim=-1)


def paid_rewards(graded: torch.Tensor, config: SequenceRunConfig) -> torch.Tensor:
    """(..., n) graded values → rewards as paid (ranged correctness mapped onto its range)."""
    lows = torch.tensor([s.low for s in config.rewards], dtype=graded.dtype)
    highs = torch.tensor([s.high for s in config.rewards], dtype=graded.dtype)
    return lows + (highs - lows) * graded


__all__ = ["CLOSE", "END", "OPEN", "THINK", "ParsedResponses", "Prompts", "base_logits", "graded_rewards",
           "make_prompts", "paid_rewards", "parse_responses", "vocabulary_size"]
