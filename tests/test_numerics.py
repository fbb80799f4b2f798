"""One numeric setting on machines of either kind (gdpo.numerics, config `cpu_numerics`).

The portable setting lives in a process's environment, read by torch, oneDNN and MKL when they load; so its
real tests run in fresh processes: one started with it trains with AVX2 kernels in float32 and records so,
and one asked to be portable without it refuses to train.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from gdpo import numerics
from gdpo.generation import precision

REPO = Path(__file__).resolve().parents[1]


def test_the_settings_and_their_environments():
    assert numerics.numeric_environment("native") == {}
    portable = numerics.numeric_environment("portable")
    assert portable == numerics.PORTABLE_ENVIRONMENT and portable["GDPO_CPU_BF16"] == "never"
    assert portable["ATEN_CPU_CAPABILITY"] == "avx2" and portable[numerics.NUMERICS_VARIABLE] == "portable"
    with pytest.raises(ValueError, match="cpu_numerics: 'fast' is not a setting; use one of native, portable"):
        numerics.numeric_environment("fast")


def test_applying_a_setting_sets_only_its_variables():
    environ = {"PATH": "/bin"}
    assert numerics.apply_numeric_environment("native", environ) == {} and environ == {"PATH": "/bin"}
    numerics.apply_numeric_environment("portable", environ)
    assert environ == {"PATH": "/bin", **numerics.PORTABLE_ENVIRONMENT}


def test_this_process_cannot_become_portable_once_torch_is_loaded(monkeypatch):
    for name in numerics.PORTABLE_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(RuntimeError, match="before torch is imported in this process"):
        numerics.apply_numeric_environment("portable")
    assert numerics.NUMERICS_VARIABLE not in os.environ  # nothing half set


def test_every_difference_from_the_portable_setting_is_named():
    good = dict(numerics.PORTABLE_ENVIRONMENT)
    assert numerics.portable_problems(good, "AVX2", "float32") == []
    problems = numerics.portable_problems({**good, "MKL_CBWR": None}, "AVX512", "bfloat16")
    assert len(problems) == 3
    assert "MKL_CBWR=None (needs 'AVX2')" in problems[0]
    assert "AVX512 kernels" in problems[1] and "bfloat16 work runs in bfloat16" in problems[2]


def test_never_computes_bfloat16_work_in_float32_even_on_a_native_cpu(monkeypatch, caplog):
    monkeypatch.setattr(precision, "native_cpu_bf16", lambda: True)
    monkeypatch.setenv(precision.CPU_BF16_VARIABLE, "never")
    assert precision.cpu_dtype(torch.bfloat16) == torch.float32
    assert precision.precision_record() == {"native_cpu_bf16": True, "cpu_bf16_runs_in": "float32"}
    monkeypatch.setattr(precision, "native_cpu_bf16", lambda: False)  # as oneDNN limited to AVX2 reports it
    precision.cpu_dtype(torch.bfloat16)
    assert "no native bfloat16" not in caplog.text  # a choice, not said to be the CPU's lack


def test_a_native_process_records_its_setting_and_is_not_checked(monkeypatch):
    monkeypatch.delenv(numerics.NUMERICS_VARIABLE, raising=False)
    record = precision.check_numerics()
    assert record["setting"] == "native" and record["torch_capability"] == torch.backends.cpu.get_cpu_capability()


TRAIN_TWICE = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import yaml
    from gdpo.plan import resolve_run_settings
    from gdpo.training.run import read_metrics, train
    config = yaml.safe_load(Path("config/smoke.yaml").read_text())
    config["training"] = {**config.get("training", {}), "bf16": True}
    out = Path(sys.argv[2])
    for name in sys.argv[3:]:
        train(resolve_run_settings(config, "arithmetic", "gdpo", 4), sys.argv[1], out / name, threads=1)
    print(json.dumps([[{k: v for k, v in r.items() if "second" not in k and k != "step_time"}
                       for r in read_metrics(out / name / "metrics.jsonl")] for name in sys.argv[3:]]))
""")


def _run(environ: dict, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in numerics.PORTABLE_ENVIRONMENT}
    return subprocess.run([sys.executable, "-c", TRAIN_TWICE, *args], check=False, cwd=REPO, capture_output=True, text=True,
                          env={**env, **environ, "PYTHONPATH": str(REPO)}, timeout=300)


def test_a_portable_process_trains_with_avx2_kernels_in_float32_and_repeats_itself(tiny_model, tmp_path):
    process = _run(numerics.PORTABLE_ENVIRONMENT, str(tiny_model), str(tmp_path), "a", "b")
    assert process.returncode == 0, process.stderr[-3000:]
    first, second = json.loads(process.stdout.strip().splitlines()[-1])
    assert first == second and len(first) == 4
    env = json.loads((tmp_path / "a" / "env.json").read_text())
    assert env["numerics"]["setting"] == "portable" and env["numerics"]["torch_capability"] == "AVX2"
    assert env["numerics"]["cpu_bf16_runs_in"] == "float32" and env["numerics"]["torch_threads"] == 1
    assert env["numerics"]["mkl_cbwr"] == "AVX2" and env["precision"]["cpu_bf16_runs_in"] == "float32"


def test_a_process_asked_to_be_portable_without_its_environment_refuses_to_train(tiny_model, tmp_path):
    process = _run({numerics.NUMERICS_VARIABLE: "portable"}, str(tiny_model), str(tmp_path), "a")
    assert process.returncode != 0
    assert "should compute with the portable numeric setting" in process.stderr
    assert "ATEN_CPU_CAPABILITY=None (needs 'avx2')" in process.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "a.work").exists()  # stopped before training


AMD_AVX512 = "model name\t: AMD EPYC 9B14\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512bw avx512_bf16 avx512_vnni\n"
INTEL_AVX2 = "model name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nflags\t\t: fpu sse2 avx avx2 fma\n"


@pytest.mark.parametrize(("cpuinfo", "kind"), [
    (AMD_AVX512, "AVX-512 with native bfloat16"),
    (AMD_AVX512.replace(" avx512_bf16", ""), "AVX-512 without native bfloat16"),
    (INTEL_AVX2, "AVX2"),
    (INTEL_AVX2.replace(" avx2", ""), "older than AVX2"),
    ("", "older than AVX2"),
])
def test_the_machine_kind_comes_from_the_cpu_flags(cpuinfo, kind):
    record = numerics.machine_record(cpuinfo)
    assert record["kind"] == kind and set(record) == {"cpu", "kind", "cores"}
    assert record["cpu"] == (cpuinfo.splitlines()[0].split(":")[1].strip() if cpuinfo else None)
