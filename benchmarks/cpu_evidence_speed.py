"""Where the cpu-evidence experiment's time goes, as a fraction of what this machine can do.

Reads finished runs (``metrics.jsonl`` and ``eval.json`` under the given directories, e.g. the committed
evidence) and reports per task family: the median seconds per optimizer step, its generation share, the
sampled tokens per second, and the evaluation's items per second; then measures this machine with one thread
(the experiment runs one thread per job): the memory read bandwidth (decoding reads every weight once per
token) and the bfloat16 and float32 matrix throughput (training's forward and backward), and states the
fractions: decoding's weight traffic over the bandwidth, and training's useful FLOPs over the bf16 peak.

    python benchmarks/cpu_evidence_speed.py paper_figures/cpu-evidence/evidence/runs
    python benchmarks/cpu_evidence_speed.py results/cpu-evidence-pilot/tool_calling --family tool_calling

Machine figures are measured while whatever else runs on the machine runs; the report says the load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rollout_speed import read_bandwidth_gb_s  # noqa: E402

#: SmolLM2-135M: parameters (tied embeddings counted once) and the weight bytes one bfloat16 decoding step reads.
PARAMETERS = 134.5e6


def matmul_gflops(dtype: torch.dtype, size: int = 1024, repeats: int = 8) -> float:
    """Sustained matrix-product throughput (GFLOP/s) of one thread: median of ``repeats`` products."""
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    a @ b  # warm-up (kernel choice, packing)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * size ** 3 / statistics.median(times) / 1e9


def family_of(run_dir: Path) -> str:
    settings = json.loads((run_dir / "config.json").read_text()) if (run_dir / "config.json").exists() else {}
    return settings.get("family") or run_dir.parent.parent.name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+", help="directories holding run directories (metrics.jsonl, eval.json)")
    parser.add_argument("--family", help="family of every run found (when the runs carry no config.json)")
    parser.add_argument("--record", default=None,
                        help="also write each family's median seconds per step and evaluated samples per second here "
                             "(JSON; `gdpo plan` reads benchmarks/reference/cpu_step_times.json for a CPU config's "
                             "hours)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    by_family: dict[str, dict[str, list[float]]] = {}
    for root in map(Path, args.dirs):
        for metrics in sorted(root.rglob("metrics.jsonl")):
            family = args.family or family_of(metrics.parent)
            steps = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
            record = by_family.setdefault(family, {"step": [], "generation": [], "tokens": [], "train_tokens": [],
                                                   "decode_steps_per_s": [], "eval_items_per_s": [],
                                                   "flops_per_token": 0.0})
            config = json.loads((metrics.parent / "config.json").read_text()) if (
                metrics.parent / "config.json").exists() else {}
            trl = config.get("trl", {})
            rows = trl.get("per_device_train_batch_size", 4) * trl.get("gradient_accumulation_steps", 2)
            groups = rows // trl.get("num_generations", 4)
            # forward + activation gradients ≈ 4 FLOPs per parameter and token, 6 with activation checkpointing
            record["flops_per_token"] = (6 if trl.get("gradient_checkpointing", True) else 4) * PARAMETERS
            previous_tokens = steps[0].get("num_tokens", 0.0)
            for step in steps[1:]:  # the first step includes compiling and prepacking
                # TRL counts each completion's prompt; packing scores a group's prompt once
                completion_tokens = rows * step["completions/mean_length"]
                prompt_tokens = (step.get("num_tokens", float("nan")) - previous_tokens - completion_tokens) / rows
                record["train_tokens"].append(groups * prompt_tokens + completion_tokens)
                previous_tokens = step.get("num_tokens", float("nan"))
                record["step"].append(step["step_time"])
                record["generation"].append(step.get("generation/seconds", float("nan")))
                record["tokens"].append(step.get("generation/tokens_per_second", float("nan")))
                # a step's rows are sampled together: its longest completion is the number of decoding steps
                if step.get("generation/seconds"):
                    record["decode_steps_per_s"].append(step["completions/max_length"] / step["generation/seconds"])
            eval_path = metrics.parent / "eval.json"
            if eval_path.exists():
                evaluation = json.loads(eval_path.read_text())
                items = sum(b.get("n_items", 0) for b in evaluation["benchmarks"].values())
                samples = (evaluation.get("settings") or {}).get("num_samples", 1)
                if evaluation.get("eval_seconds"):
                    record["eval_items_per_s"].append(items * samples / evaluation["eval_seconds"])
    load = os.getloadavg()[0]
    bandwidth = read_bandwidth_gb_s()
    bf16, fp32 = matmul_gflops(torch.bfloat16), matmul_gflops(torch.float32)
    weight_bytes = 2 * PARAMETERS
    print(f"machine, one thread (load average {load:.1f} while measuring): memory read {bandwidth:.1f} GB/s, "
          f"matrix products bf16 {bf16:.0f} GFLOP/s, fp32 {fp32:.0f} GFLOP/s")
    for family, record in sorted(by_family.items()):
        step = statistics.median(record["step"])
        generation = statistics.median(record["generation"])
        tokens = statistics.median(record["tokens"])
        # decoding is bound by reading the weights once per decoding step (a batch of rows shares the read)
        print(f"{family}: {len(record['step'])} steps, median {step:.1f} s per step, generation {generation:.1f} s "
              f"({generation / step:.0%}), {tokens:.0f} sampled tokens/s")
        train_seconds = step - generation
        tokens_trained = statistics.median(record["train_tokens"])
        flops = record["flops_per_token"] * tokens_trained
        limit = bandwidth * 1e9 / weight_bytes
        decode_steps = statistics.median(record["decode_steps_per_s"])
        # prefill of the prompts is inside generation's seconds too: the fraction is a lower bound for decoding
        print(f"  decoding: {decode_steps:.1f} decoding steps/s (longest completion over generation seconds, "
              f"prefill included) against {limit:.0f} at the bandwidth limit: {decode_steps / limit:.0%}")
        print(f"  training: {train_seconds:.1f} s per step for {tokens_trained:.0f} packed tokens "
              f"({flops / 1e12:.2f} TFLOP): {flops / 1e9 / train_seconds / bf16:.0%} of the bf16 matrix peak")
        if record["eval_items_per_s"]:
            print(f"  evaluation: median {statistics.median(record['eval_items_per_s']):.2f} samples/s "
                  f"over {len(record['eval_items_per_s'])} runs")
    if args.record:
        write_record(Path(args.record), by_family, args.dirs)


def write_record(path: Path, by_family: dict, dirs: list[str]) -> None:
    """The measured step times `gdpo plan` reads (gdpo.reporting.bill.load_step_times)."""
    import datetime
    import sys

    # The CPUs the runs were made on (each run's env.json), not this one: the times are theirs.
    cpus = []
    for root in map(Path, dirs):
        for env in sorted(root.rglob("env.json")):
            cpu = json.loads(env.read_text()).get("cpu")
            if cpu and cpu not in cpus:
                cpus.append(cpu)
    families = {}
    for family, record in sorted(by_family.items()):
        families[family] = {"seconds_per_step": round(statistics.median(record["step"]), 3),
                            "steps_measured": len(record["step"])}
        if record["eval_items_per_s"]:
            families[family]["eval_samples_per_second"] = round(statistics.median(record["eval_items_per_s"]), 4)
    path.write_text(json.dumps({
        "measured": {"date": datetime.date.today().isoformat(), "command": " ".join(["python", *sys.argv]),
                     "runs": dirs, "run_cpus": cpus, "threads_per_job": 1,
                     "note": "medians over the runs' logged steps (first step of each run left out) and evaluations"},
        "families": families}, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
