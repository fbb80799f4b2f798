"""GPU check of the paper models: a few steps of our trainer and each family's evaluation generation, measured
against the memory plan.

For each task of the paper configs (one per model and family), the model is built from its shipped architecture
(``gdpo/training/model_configs/*.json``; random weights, nothing downloaded), trained for a few steps by
:class:`gdpo.training.trainer.RegistryGRPOTrainer` (GDPO's advantage) at the config's per-device batch, prompt
budget and completion length in bfloat16 with gradient checkpointing, then generates as the family's evaluation
does (the config's batch size and new tokens, greedy or sampled). Prints, per task: step time, trained tokens per
second, generation tokens per second, peak GPU memory (``torch.cuda.max_memory_allocated``) and what was already
allocated when the peak counter was reset, beside the memory plan for the same settings
(:func:`gdpo.training.memory_plan.gpu_check_plans` on one GPU: no DeepSpeed sharding and no colocated vLLM, so
bfloat16 weights and AdamW moments; the part of its runtime overhead outside torch's allocator left out).

Garbage is collected before each peak counter is reset: TRL's fused LM head and accelerate replace a model's
``forward`` with a method bound to the model, a reference cycle, so a dropped model (the reference model after
training, the previous task's models) stays on the GPU until the garbage collector runs, and the transformers
Trainer collects only once training has started. The record of 2026-11-28 was taken before this; see ``--replan``.

One GPU is not a paper train job (8 GPUs under ZeRO-3 with vLLM beside): a task whose one-GPU plan exceeds the
GPU is skipped with the plan's numbers. Random weights almost never sample EOS, so every completion runs to the
length limit: the worst case the plan assumes. ``--completion-tokens`` / ``--eval-new-tokens`` shorten the
lengths (the plan is evaluated at the lengths run, so the comparison stays like for like).

``--replan RECORD`` needs no GPU and no torch: it prints, per record line, the current plan of that line's shapes
beside its measured peaks as JSON lines (see :func:`replan`), and exits 1 if a plan falls short of a peak.

Needs torch (CUDA), transformers, accelerate and peft, plus trl, datasets, pyyaml and jsonschema (``pip install
trl==1.16.0 datasets pyyaml jsonschema``) and this repository on ``PYTHONPATH``. No vLLM, no DeepSpeed.

    python benchmarks/gpu_check.py                        # every paper task on the GPU
    python benchmarks/gpu_check.py --tasks tool_calling_1.5b math_r1_1.5b --steps 2
    python benchmarks/gpu_check.py --cpu-smoke            # tiny shapes on the CPU: the same code path
    python benchmarks/gpu_check.py --replan benchmarks/reference/gpu_check-h200-2026-11-28.jsonl
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

PAPER_CONFIGS = ("paper-tool_calling", "paper-math", "paper-code")
#: Shapes of the ``--cpu-smoke`` models (the paper model's layout, tiny sizes).
SMOKE_SHAPES = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=16, vocab_size=512)
#: ``--cpu-smoke`` lengths and batch: prompt tokens, completion tokens, evaluation new tokens.
SMOKE_LENGTHS = (24, 16, 8)
#: A training peak within this of the memory resident at the reset of the peak counter is that memory, not the
#: training's (GiB): what the allocator holds besides the models (cuBLAS workspaces) was 0.14-0.17 GiB there.
RESIDENT_TOLERANCE_GIB = 0.25


def paper_tasks(names: list[str] | None, every_task: bool = False) -> list[tuple[str, dict, dict]]:
    """(task, its config, the config's merged training settings) of each paper task, one per model and family
    (``every_task``: all of them)."""
    from gdpo.config import load_config

    chosen, seen = [], set()
    for config_name in PAPER_CONFIGS:
        config = load_config(REPO / "config" / f"{config_name}.yaml")
        for task, spec in config["tasks"].items():
            key = (spec["model"], spec["family"])
            if (names and task not in names) or (not names and not every_task and key in seen):
                continue
            seen.add(key)
            chosen.append((task, config, {**config.get("training", {}), **spec.get("training", {})}))
    if names and len(chosen) != len(set(names)):
        known = sorted(t for c in PAPER_CONFIGS for t in load_config(REPO / "config" / f"{c}.yaml")["tasks"])
        raise SystemExit(f"unknown task(s) among {names}; paper tasks are: {', '.join(known)}")
    return chosen


def model_config(spec: str, smoke: bool) -> dict:
    """The shipped architecture of a model (tiny shapes with ``smoke``), without its provenance note."""
    from gdpo.training.memory_plan import model_config_file

    config = {k: v for k, v in json.loads(model_config_file(spec).read_text()).items() if not k.startswith("_")}
    if smoke:
        config.update(SMOKE_SHAPES)
    return config


def build_model(config: dict, device, dtype):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    with torch.device(device):
        return AutoModelForCausalLM.from_config(AutoConfig.for_model(**config), dtype=dtype,
                                                attn_implementation="sdpa")


def prompts(tokenizer, count: int, tokens: int) -> list[str]:
    """``count`` plain-text prompts of about ``tokens`` tokens each (numbers, cut to length)."""
    rows = []
    for i in range(count):
        text = " ".join(str((i * 7919 + j * 104729) % 100000) for j in range(tokens))
        rows.append(tokenizer.decode(tokenizer(text).input_ids[:tokens]))
    return rows


def length_reward(completion_ids, **kwargs) -> list[float]:
    """1 for a completion under 3/4 of the limit (random weights rarely stop: mostly 0)."""
    return [float(len(ids) < 0.75 * kwargs["max_len"][0]) for ids in completion_ids]


def parity_reward(completion_ids, **kwargs) -> list[float]:
    """Share of even token ids: a reward that varies within a group, so GDPO's advantage is not zero."""
    return [sum(1 for i in ids if i % 2 == 0) / max(len(ids), 1) for ids in completion_ids]


def peak_bytes(device) -> int:
    import torch

    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # the process's peak RSS (Linux: KiB)


def reset_peak(device) -> float:
    """Collect garbage (dropped models wait for it, see the module docstring), then reset the peak counter; the
    GiB still allocated, which the next peak includes."""
    import torch

    gc.collect()
    if device.type != "cuda":
        return 0.0
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    return torch.cuda.memory_allocated(device) / 2**30


def planned(task: str, config: dict, batch: int, prompt_tokens: int, completion: int, eval_batch: int,
            eval_new: int, device_gib: float, architecture: dict | None = None) -> tuple[float, float, str]:
    """(train GiB, evaluation GiB, one-GPU plan text) of the memory plan for what this check runs, as the
    allocator sees it (:func:`gdpo.training.memory_plan.allocator_bytes`); ``architecture``: other shapes than the
    task's model's."""
    from gdpo.training.memory_plan import GIB, ModelDims, allocator_bytes, gpu_check_plans

    dims = ModelDims.from_config(architecture, config["tasks"][task]["model"]) if architecture else None
    train, evaluated = gpu_check_plans(config, task, batch, prompt_tokens, completion, eval_batch, eval_new,
                                       device_gib, dims=dims)
    return allocator_bytes(train) / GIB, allocator_bytes(evaluated) / GIB, train.describe()


def replan(path: Path) -> list[dict]:
    """The current plan of each line of a ``gpu_check`` record, beside its measured peaks (GiB).

    A line holds when ``plan_train_gib`` ≥ the training peak × (1 + ``RECORD_MARGIN``) and ``plan_eval_gib`` ≥
    the evaluation's own peak × (1 + ``RECORD_MARGIN``). What a peak counts (``train_peak_is``): a peak within
    :data:`RESIDENT_TOLERANCE_GIB` of the memory resident at the reset of the counter is that memory ("resident at
    reset"), and the training peak was not measured (it is at most the recorded one); else it is the training's.
    Records with ``train_start_gib`` / ``eval_start_gib`` name what was resident; older ones (2026-11-28) were
    taken without collecting garbage first, and the tasks ran in one process in file order, so at the training
    reset the task's own bfloat16 weights and reference and the previous line's were resident, and during the
    evaluation the task's reference model was (both dropped, awaiting the garbage collector).
    """
    from gdpo.training.memory_plan import BF16, GIB, RECORD_MARGIN, model_dims

    tasks = {task: config for task, config, _ in paper_tasks(None, every_task=True)}
    rows, previous_models = [], 0.0
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        task = record["task"]
        if task not in tasks:
            raise SystemExit(f"{path}: task {task!r} is no paper task")
        config = tasks[task]
        spec = config["tasks"][task]
        models = 2 if float({**config.get("training", {}), **spec.get("training", {})}.get("beta", 0)) > 0 else 1
        weights = model_dims(spec["model"]).parameters() * BF16 / GIB
        row = {"task": task, "model": spec["model"]}
        if "micro_batch" not in record:  # a task that failed before its shapes were written
            rows.append({**row, "holds": None, "note": record.get("failed", "no shapes")})
            previous_models = 0.0
            continue
        plan_train, plan_eval, _ = planned(task, config, record["micro_batch"], record["prompt_tokens"],
                                           record["completion_tokens"], record.get("eval_batch", 8),
                                           record.get("eval_new_tokens", 128), 80.0)
        row.update(micro_batch=record["micro_batch"], prompt_tokens=record["prompt_tokens"],
                   completion_tokens=record["completion_tokens"], plan_train_gib=round(plan_train, 2),
                   plan_eval_gib=round(plan_eval, 2), margin_required=RECORD_MARGIN)
        holds = True
        if "train_peak_gib" in record:
            peak = record["train_peak_gib"]
            resident = record.get("train_start_gib", models * weights + previous_models)
            row.update(train_peak_gib=peak, resident_at_reset_gib=round(resident, 2))
            if peak - resident <= RESIDENT_TOLERANCE_GIB:
                row.update(train_peak_is="resident at reset", train_margin=None)
            else:
                row.update(train_peak_is="training", train_margin=round(plan_train / peak - 1, 3))
                holds &= plan_train >= peak * (1 + RECORD_MARGIN)
        if "eval_peak_gib" in record:
            # A record without eval_start_gib held the task's reference model through its evaluation; a newer one
            # collected it first.
            own = record["eval_peak_gib"] - (0.0 if "eval_start_gib" in record else (models - 1) * weights)
            row.update(eval_peak_gib=record["eval_peak_gib"], eval_peak_own_gib=round(own, 2),
                       eval_margin=round(plan_eval / own - 1, 3))
            holds &= plan_eval >= own * (1 + RECORD_MARGIN)
        row["holds"] = holds
        rows.append(row)
        # What this task left for the next one's reset: its policy and reference (the old script's garbage).
        previous_models = 0.0 if "train_start_gib" in record else models * weights
    return rows


def check_task(task: str, config: dict, paper_training: dict, args, device) -> dict:
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, TrainerCallback
    from trl import GRPOConfig

    from gdpo.training.models import build_tiny_tokenizer
    from gdpo.training.trainer import RegistryGRPOTrainer

    spec = config["tasks"][task]
    cuda = device.type == "cuda"
    completion = args.completion_tokens or paper_training["max_completion_length"]
    context = paper_training.get("vllm_max_model_length", completion + 2048)
    prompt_tokens = context - paper_training["max_completion_length"]
    evaluation = {**(config.get("evaluation") or {}), **(spec.get("evaluation") or {})}
    eval_new = args.eval_new_tokens or evaluation.get("max_new_tokens", 128)
    batch = paper_training["per_device_train_batch_size"]
    generations = paper_training["num_generations"]
    if args.cpu_smoke:
        prompt_tokens, completion, eval_new = SMOKE_LENGTHS
        batch, generations = 2, 4
    # One process: a generation batch of whole groups, at least two optimizer updates per generation batch as
    # the paper configs make several (the micro-batch is the paper's; accumulation 1, so each step is one update).
    steps_per_generation = math.lcm(batch, generations) // batch
    if steps_per_generation == 1:
        steps_per_generation = 2
    training = {**paper_training, "per_device_train_batch_size": batch, "gradient_accumulation_steps": 1,
                "steps_per_generation": steps_per_generation, "max_completion_length": completion,
                "vllm_max_model_length": prompt_tokens + completion, "use_vllm": False, "bf16": cuda,
                "gradient_checkpointing": True}
    eval_batch = int(evaluation.get("batch_size", 8)) if not args.cpu_smoke else 2
    evaluation = {**evaluation, "batch_size": eval_batch, "max_new_tokens": eval_new}
    tokenizer = build_tiny_tokenizer()  # any text encodes; its ids are a subset of every model's vocabulary
    tokenizer.padding_side = "left"
    architecture = {**model_config(spec["model"], args.cpu_smoke), "bos_token_id": tokenizer.eos_token_id,
                    "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id}
    device_gib = (torch.cuda.get_device_properties(device).total_memory / 2**30 if cuda else 64.0)
    plan_train, plan_eval, plan_text = planned(task, config, batch, prompt_tokens, completion, eval_batch, eval_new,
                                               device_gib, architecture)
    record = {"task": task, "model": spec["model"], "device": torch.cuda.get_device_name(device) if cuda else "cpu",
              "micro_batch": batch, "prompt_tokens": prompt_tokens, "completion_tokens": completion,
              "plan_train_gib": round(plan_train, 2), "plan_eval_gib": round(plan_eval, 2)}
    if cuda and plan_train > 0.95 * device_gib:
        record["skipped"] = f"the one-GPU plan needs {plan_train:.1f} GiB of {device_gib:.0f} (paper jobs shard it over 8)"
        print(plan_text)
        return record

    work = Path(tempfile.mkdtemp(prefix="gpu_check-"))
    model_dir = work / "model"  # a model directory, as the train rule gives the trainer (TRL loads its reference from it)
    # Random initialisation on the GPU: minutes faster than on the host for a 7B model.
    built = build_model(architecture, device, torch.bfloat16 if cuda else torch.float32)
    built.save_pretrained(model_dir)
    del built
    if cuda:
        torch.cuda.empty_cache()
    tokenizer.save_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16 if cuda else torch.float32,
                                                 attn_implementation="sdpa")
    rows = steps_per_generation * batch // generations * (args.steps + 1)
    dataset = Dataset.from_dict({"prompt": prompts(tokenizer, rows, prompt_tokens), "max_len": [completion] * rows})
    times: list[float] = []
    entries: list[dict] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, *a, **k):
            if cuda:
                torch.cuda.synchronize(device)
            self.start = time.perf_counter()

        def on_step_end(self, *a, **k):
            if cuda:
                torch.cuda.synchronize(device)
            times.append(time.perf_counter() - self.start)

        def on_log(self, _args, _state, _control, logs=None, **kwargs):
            entries.append(dict(logs or {}))

    trl_keys = ("per_device_train_batch_size", "gradient_accumulation_steps",
                "steps_per_generation", "max_completion_length", "learning_rate", "beta", "loss_type", "epsilon",
                "epsilon_high", "temperature", "bf16", "gradient_checkpointing")
    try:
        arguments = GRPOConfig(output_dir=str(work / "out"), max_steps=args.steps, logging_steps=1, save_strategy="no",
                               report_to="none", use_cpu=not cuda, seed=0, **{k: training[k] for k in trl_keys
                                                                             if k in training},
                               num_generations=generations)
        trainer = RegistryGRPOTrainer(model=model, reward_funcs=[length_reward, parity_reward], args=arguments,
                                      train_dataset=dataset, processing_class=tokenizer, advantage_method="gdpo",
                                      callbacks=[Timer()])
        record["train_start_gib"] = round(reset_peak(device), 2)
        trainer.train()
        record["train_peak_gib"] = round(peak_bytes(device) / 2**30, 2)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    generation_rates = [entry["generation/tokens_per_second"] for entry in entries
                        if "generation/tokens_per_second" in entry]
    # Steps without generation (the second update of a generation batch) time the update alone.
    record["step_seconds"] = [round(t, 2) for t in times]
    trained_tokens = batch * (prompt_tokens + completion)
    record["train_tokens_per_second"] = round(trained_tokens / min(times), 1)
    record["rollout_tokens_per_second"] = round(generation_rates[0], 1) if generation_rates else None

    model = trainer.accelerator.unwrap_model(trainer.model)
    model.eval()
    # The reference model outlives the trainer until garbage is collected (reset_peak does): an evaluation job
    # holds the policy alone.
    del trainer
    encoded = tokenizer(prompts(tokenizer, eval_batch, prompt_tokens), return_tensors="pt", padding=True)
    encoded = {key: value.to(device) for key, value in encoded.items()}
    sample = float(evaluation.get("temperature", 0.0)) > 0
    record["eval_start_gib"] = round(reset_peak(device), 2)
    start = time.perf_counter()
    with torch.no_grad():
        output = model.generate(**encoded, max_new_tokens=eval_new, min_new_tokens=eval_new, do_sample=sample,
                                temperature=evaluation.get("temperature") if sample else None,
                                top_p=evaluation.get("top_p") if sample else None,
                                pad_token_id=tokenizer.pad_token_id)
    if cuda:
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    new_tokens = (output.shape[1] - encoded["input_ids"].shape[1]) * eval_batch
    record.update(eval_batch=eval_batch, eval_new_tokens=eval_new, eval_seconds=round(seconds, 2),
                  eval_tokens_per_second=round(new_tokens / seconds, 1),
                  eval_peak_gib=round(peak_bytes(device) / 2**30, 2))
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", help="paper task names (default: one per model and family)")
    parser.add_argument("--steps", type=int, default=2, help="optimizer steps per task (default 2)")
    parser.add_argument("--completion-tokens", type=int, help="shorter completions than the config's")
    parser.add_argument("--eval-new-tokens", type=int, help="fewer evaluation tokens than the config's")
    parser.add_argument("--cpu-smoke", action="store_true", help="tiny shapes on the CPU (no GPU needed)")
    parser.add_argument("--out", type=Path, help="write the records as JSON lines here")
    parser.add_argument("--replan", type=Path, metavar="RECORD",
                        help="print the current plan of each line of a record beside its peaks (no GPU, no torch)")
    args = parser.parse_args(argv)
    if args.replan:
        rows = replan(args.replan)
        for row in rows:
            print(json.dumps(row), flush=True)
        return 0 if all(row["holds"] is not False for row in rows) else 1

    import torch

    if not args.cpu_smoke and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run on a GPU machine, or with --cpu-smoke for the tiny CPU version")
    device = torch.device("cpu" if args.cpu_smoke else "cuda")
    import transformers
    import trl

    versions = {"torch": torch.__version__, "transformers": transformers.__version__, "trl": trl.__version__}
    if device.type == "cuda":
        versions["gpu"] = torch.cuda.get_device_name(device)
    print(json.dumps(versions), flush=True)
    records = []
    for task, config, training in paper_tasks(args.tasks):
        try:
            record = check_task(task, config, training, args, device)
        except Exception as error:  # one task out of memory (say) must not lose the others' figures
            record = {"task": task, "failed": f"{type(error).__name__}: {str(error)[:300]}"}
        records.append(record)
        print(json.dumps(record), flush=True)
        if args.out:
            with args.out.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")
        gc.collect()  # this task's models, before the next task's reset
        if device.type == "cuda":
            torch.cuda.empty_cache()
    header = ("task", "micro_batch", "prompt_tokens", "completion_tokens", "step_seconds", "train_tokens_per_second",
              "rollout_tokens_per_second", "train_peak_gib", "plan_train_gib", "eval_tokens_per_second",
              "eval_peak_gib", "plan_eval_gib")
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for record in records:
        print("| " + " | ".join(str(record.get(key, record.get("skipped", record.get("failed", "")) if key == "step_seconds" else ""))
                                for key in header) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
