"""Counter-based random numbers, one independent stream per (seed, step), vectorised over seeds.

A run's draws for seed k must not depend on which other seeds share the tensors (so that adding seeds
never changes seed k's results) and there must be no Python loop over seeds. A counter-based generator
gives both: uniform number i of stream (seed, step) is a hash of (seed, step, i) — SplitMix64's output
function applied to a Weyl sequence — computed in int64 tensor arithmetic (multiplication wraps modulo
2^64, as the test against a pure-Python SplitMix64 checks).
"""

from __future__ import annotations

import torch


def _signed(value: int) -> int:
    """A 64-bit unsigned constant as the int64 with the same bits."""
    return value - (1 << 64) if value >= (1 << 63) else value


GOLDEN_GAMMA = _signed(0x9E3779B97F4A7C15)
_MIX_1 = _signed(0xBF58476D1CE4E5B9)
_MIX_2 = _signed(0x94D049BB133111EB)
_UNIT = 2.0**-53
#: Separates the streams of different purposes drawn from the same seed.
SAMPLING_PURPOSE = 0x5EED


def _shift_right(values: torch.Tensor, bits: int) -> torch.Tensor:
    """Logical (unsigned) right shift of int64 values; torch's ``>>`` is arithmetic."""
    return (values >> bits) & ((1 << (64 - bits)) - 1)


def mix64(values: torch.Tensor) -> torch.Tensor:
    """SplitMix64's output function on int64 tensors (bits as uint64)."""
    values = (values ^ _shift_right(values, 30)) * _MIX_1
    values = (values ^ _shift_right(values, 27)) * _MIX_2
    return values ^ _shift_right(values, 31)


def seed_keys(seeds, purpose: int = SAMPLING_PURPOSE) -> torch.Tensor:
    """(S,) int64 key of each seed's stream family."""
    seeds = torch.as_tensor(seeds, dtype=torch.int64)
    return mix64(mix64(seeds * GOLDEN_GAMMA + purpose))


def step_keys(keys: torch.Tensor, step: int) -> torch.Tensor:
    """(S,) key of the stream of ``step`` under each seed key."""
    return mix64(keys + torch.tensor(step + 1, dtype=torch.int64) * GOLDEN_GAMMA)


def counter_offsets(count: int) -> torch.Tensor:
    """(count,) int64 Weyl offsets i·γ, i = 1..count (reusable across steps)."""
    return torch.arange(1, count + 1, dtype=torch.int64) * GOLDEN_GAMMA


def uniforms(keys: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """(S, count) float64 uniforms in [0, 1): element i of stream k is SplitMix64(keys[k] + i·γ).

    Args:
        keys: (S,) int64 stream keys (from :func:`step_keys`).
        offsets: (count,) from :func:`counter_offsets`.
    """
    bits = mix64(keys[:, None] + offsets[None, :])
    return _shift_right(bits, 11).to(torch.float64) * _UNIT
