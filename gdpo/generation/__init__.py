"""The generation floor: sampling completions from a policy and judging whether they still do the task.

Task families, training and evaluation all import from here; this package imports nothing of theirs (nor of
any other ``gdpo`` layer: the ``layers`` contract in ``pyproject.toml``):

- :mod:`gdpo.generation.rollout`: the bfloat16 rollout engine (a decode-only, LoRA-merged copy of the
  policy) that samples training rollouts and, with ``fast_generation``, evaluation completions;
- :mod:`gdpo.generation.generate`: loading a policy to evaluate and sampling completions from it
  (``transformers`` ``generate`` or the rollout engine);
- :mod:`gdpo.generation.health`: the collapse gate on the completions (does the policy still do the task's
  basic act; are its responses cut at the token limit), written by each family's evaluator and read by the
  reporting layer. It needs neither torch nor transformers, and this file imports nothing, so reading it
  stays light.
"""
