"""Process memory: keep the C allocator from holding on to freed tensor buffers.

glibc's ``malloc`` serves a block of at least ``M_MMAP_THRESHOLD`` bytes (128 KiB at start) with its own
``mmap`` and unmaps it on free. But the threshold is dynamic: each freed mmapped block raises it to that
block's size, up to 32 MiB. After the first backward pass, most activation and gradient buffers of a small
model fall below it and come from the heap, where a free cannot return memory to the system while a later
block is alive. A full fine-tune then keeps ~0.6 GB of freed buffers resident and its peak RSS grows with
every step (measured on the format warm-up: benchmarks/README.md). Fixing the thresholds stops that, at the
cost of a page fault per fresh large block. The ``warmup-model`` command sets it for its process.
"""

from __future__ import annotations

import ctypes
import ctypes.util

#: glibc's ``mallopt`` parameter numbers (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

#: glibc's initial mmap threshold, kept fixed.
DEFAULT_THRESHOLD_BYTES = 128 * 1024


def return_freed_memory_to_os(threshold_bytes: int = DEFAULT_THRESHOLD_BYTES) -> bool:
    """Fix glibc's mmap and trim thresholds at ``threshold_bytes`` for the rest of the process.

    Blocks of at least that size are then mapped and unmapped one by one, and free heap space above that
    size at the top of the heap is given back. Results are unchanged; only where memory comes from.

    Returns:
        True when the thresholds were set; False where the C library is not glibc (macOS, musl), which is
        left as it is.
    """
    if threshold_bytes <= 0:
        raise ValueError(f"threshold_bytes must be positive, got {threshold_bytes}.")
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # mallopt returns 1 on success, 0 on error.
    return mallopt(M_MMAP_THRESHOLD, threshold_bytes) == 1 and mallopt(M_TRIM_THRESHOLD, threshold_bytes) == 1
