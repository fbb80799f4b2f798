"""Training: TRL's ``GRPOTrainer`` with the advantage of any estimator of :mod:`gdpo.advantages`.

- :mod:`gdpo.training.run`: one training run, from its settings to the files of the run;
- :mod:`gdpo.training.trainer`: the trainer subclass that recomputes the advantage;
- :mod:`gdpo.training.packing`: scoring a group's shared prompt once per micro-batch;
- :mod:`gdpo.training.rewards`: reward functions as the trainer calls them;
- :mod:`gdpo.training.models`: the policy models, materialised into model directories;
- :mod:`gdpo.training.warmup`: the optional supervised format warm-up;
- :mod:`gdpo.training.memory`: keeping the C allocator from holding freed tensor buffers;
- :mod:`gdpo.training.memory_plan`: the per-GPU memory of a config's GPU jobs, checked before any job (no torch).

This file imports nothing: a module of this package is imported on its own (most of them load torch).
"""
