"""The per-GPU memory plan (gdpo/training/memory_plan.py): the shipped configs fit, an oversized one is refused
with its numbers, and the estimates match the libraries' estimators and what torch measures on a CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gdpo.cli import main
from gdpo.config import load_config
from gdpo.plan import describe_runs, updates_per_generation
from gdpo.tasks import check_required_options
from gdpo.tasks.tool_calling.bfcl_aggregate import BFCL_V3_CATEGORY_SIZES, BFCL_V3_MULTI_TURN_ITEMS, held_out_items
from gdpo.training.memory_plan import (
    BF16,
    GIB,
    MODEL_CONFIG_DIR,
    RECORD_MARGIN,
    MemoryPlanError,
    ModelDims,
    check_memory_plan,
    model_dims,
    plan_config,
    plan_training,
    training_usage,
    zero3_model_states_mem_needs,
)

REPO = Path(__file__).resolve().parents[1]
PAPER_CONFIGS = ["paper-tool_calling", "paper-math", "paper-code"]
#: Published parameter counts (billions, as the model cards and the Qwen2.5 report round them).
PUBLISHED_BILLIONS = {
    "Qwen/Qwen2.5-1.5B-Instruct": 1.54, "Qwen/Qwen2.5-3B-Instruct": 3.09, "Qwen/Qwen3-4B-Instruct-2507": 4.02,
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B": 1.78, "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": 7.62,
}


def paper_config(name: str) -> dict:
    return load_config(REPO / "config" / f"{name}.yaml")


@pytest.mark.parametrize("name", PAPER_CONFIGS)
def test_every_paper_job_fits_80_gib_with_headroom(name):
    plans = check_memory_plan(paper_config(name))
    config = paper_config(name)
    assert len(plans) == 2 * len(config["tasks"])  # a train and an evaluate job per task
    for plan in plans:
        assert plan.fits and plan.total <= 0.9 * 80 * GIB, plan.describe()


@pytest.mark.parametrize("name", ["smoke", "mini", "cpu-evidence"])
def test_cpu_configs_plan_no_gpu_job(name):
    assert plan_config(paper_config(name)) == []


def test_an_oversized_config_is_refused_with_its_numbers(tmp_path):
    config = paper_config("paper-math")
    config["training"].update(per_device_train_batch_size=16, gradient_accumulation_steps=8, steps_per_generation=64)
    with pytest.raises(MemoryPlanError) as caught:
        check_memory_plan(config, config_name="big.yaml")
    message = str(caught.value)
    assert "big.yaml" in message and "math_r1_7b / train" in message and "DOES NOT FIT" in message
    plan = plan_training(config, "math_r1_7b")
    assert f"{plan.total / GIB:.2f} GiB  total, of 72.00 GiB allowed" in message
    assert "model states: DeepSpeed ZeRO-3 estimate" in message and "per_device_train_batch_size" in message
    # validate-config stops on it too, naming the job
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["validate-config", str(path)]) == 2


def test_vllm_without_a_context_length_is_refused():
    config = paper_config("paper-math")
    del config["training"]["vllm_max_model_length"]
    plan = plan_training(config, "math_qwen3_4b")
    assert not plan.fits
    assert any("vllm_max_model_length is not set" in problem and "262,144" in problem for problem in plan.problems)


def test_a_vllm_share_too_small_for_one_sequence_is_refused():
    config = paper_config("paper-math")
    config["training"]["vllm_gpu_memory_utilization"] = 0.15  # 12 GiB < the 7B model's 14.2 GiB of weights
    plan = plan_training(config, "math_r1_7b")
    assert any("fewer than one sequence of 9,024" in problem for problem in plan.problems)


def test_memory_plan_cli_prints_a_table(capsys):
    assert main(["memory-plan", "--config", str(REPO / "config/paper-code.yaml"), "--details"]) == 0
    out = capsys.readouterr().out
    assert "| code_r1_7b | train | DeepSeek-R1-Distill-Qwen-7B |" in out and "KV cache" in out
    assert main(["memory-plan", "--config", str(REPO / "config/smoke.yaml")]) == 0
    assert "no GPU jobs" in capsys.readouterr().out


# --- the estimates against the libraries and against torch ---------------------------------------------------

def _meta_model(config: dict):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(AutoConfig.for_model(**config))


def _deepspeed_model_to_params(model) -> tuple[int, int]:
    """DeepSpeed's ``model_to_params`` (deepspeed/runtime/zero/stage3.py): shared parameters once, and the
    largest module's own parameters."""
    total = sum(dict((p.data_ptr() if p.device.type != "meta" else id(p), p.numel())
                     for p in model.parameters()).values())
    largest = max(sum(p.numel() for p in module.parameters(recurse=False)) for module in model.modules())
    return total, largest


@pytest.mark.parametrize("spec", sorted(PUBLISHED_BILLIONS))
def test_parameter_counts_are_exact_and_published(spec):
    dims = model_dims(spec)
    config = {k: v for k, v in json.loads((MODEL_CONFIG_DIR / f"{spec.replace('/', '--')}.json").read_text()).items()
              if not k.startswith("_")}
    model = _meta_model(config)
    total, largest = _deepspeed_model_to_params(model)
    assert dims.parameters() == total  # exactly, parameter by parameter
    assert dims.largest_layer_parameters() == largest
    assert round(total / 1e9, 2) == PUBLISHED_BILLIONS[spec]  # the model card's number
    from accelerate.utils import calculate_maximum_sizes

    model = model.float()  # accelerate's size of the float32 model: the parameters and the rotary buffers
    buffers = sum(buffer.numel() * buffer.element_size() for buffer in model.buffers())
    assert calculate_maximum_sizes(model)[0] == 4 * dims.parameters() + buffers and buffers < 4096


def test_model_states_match_accelerate_estimator():
    from accelerate.commands.estimate import estimate_training_usage

    for spec in PUBLISHED_BILLIONS:
        model_bytes = 4 * model_dims(spec).parameters()
        for precision in ("float32", "bfloat16"):
            assert training_usage(model_bytes, precision) == estimate_training_usage(model_bytes, precision)


def test_zero3_estimate_reproduces_deepspeeds_printed_table_for_t5_small():
    """DeepSpeed's ``estimate_zero3_model_states_mem_needs_all_live(AutoModel('t5-small'))`` prints (DeepSpeed is not
    installed here, so its published output stands in): 60M total / 16M largest-layer parameters and, per CPU |
    per GPU, 1.52 | 0.06, 1.52 | 0.06, 1.35 | 0.17, 1.35 | 0.17, 0.09 | 1.08, 0.34 | 1.08 GB (GiB)."""
    import torch
    from transformers import T5Config, T5Model

    with torch.device("meta"):  # t5-small's published shape
        model = T5Model(T5Config(d_model=512, d_ff=2048, num_layers=6, num_heads=8, d_kv=64, vocab_size=32128))
    total, largest = _deepspeed_model_to_params(model)
    assert (total // 10**6, largest // 10**6) == (60, 16)
    printed = [(1.52, 0.06), (1.52, 0.06), (1.35, 0.17), (1.35, 0.17), (0.09, 1.08), (0.34, 1.08)]
    options = [(True, True, True), (True, True, False), (True, False, True), (True, False, False),
               (False, False, True), (False, False, False)]
    for (cpu_offload, offload_params, zero_init), expected in zip(options, printed):
        cpu, gpu, _ = zero3_model_states_mem_needs(total, largest, 1, 1, cpu_offload, offload_params, zero_init)
        assert (round(cpu / GIB, 2), round(gpu / GIB, 2)) == expected


def test_zero3_estimate_equals_deepspeed_where_it_imports():
    stage3 = pytest.importorskip("deepspeed.runtime.zero.stage3")
    for gpus in (1, 8):
        for offload in (True, False):
            assert zero3_model_states_mem_needs(7_615_616_512, 544_997_376, gpus, 1, offload, False) == \
                stage3.estimate_zero3_model_states_mem_needs(7_615_616_512, 544_997_376, gpus, 1, offload, False)


def test_optimizer_and_gradient_bytes_are_measured_exactly():
    """accelerate's float32 terms, measured: AdamW keeps 8 bytes per parameter, the gradients 4."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                         num_hidden_layers=2, vocab_size=300)
    model = Qwen2ForCausalLM(config)
    dims = ModelDims.from_config(config.to_dict())
    assert sum(p.numel() for p in model.parameters()) == dims.parameters()
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randint(0, 300, (1, 8)), labels=torch.randint(0, 300, (1, 8))).loss.backward()
    optimizer.step()
    state_bytes = sum(t.numel() * t.element_size() for s in optimizer.state.values() for t in s.values() if t.ndim)
    grad_bytes = sum(p.grad.numel() * p.grad.element_size() for p in model.parameters())
    usage = training_usage(4 * dims.parameters(), "float32")
    assert state_bytes == usage["optimizer"] and grad_bytes == usage["gradients"]


@pytest.mark.parametrize("kind", ["qwen2", "qwen3"])
def test_layer_activation_estimate_matches_saved_tensors(kind):
    """Bytes a bfloat16 decoder layer keeps for backward, counted with saved-tensor hooks (parameters left out,
    shared storage once), equal the estimate per token: exactly on these shapes (tolerance 2 % for layout
    differences between torch versions)."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config, Qwen3Config

    if kind == "qwen2":
        config = Qwen2Config(hidden_size=512, intermediate_size=1536, num_attention_heads=8, num_key_value_heads=4,
                             num_hidden_layers=1, vocab_size=1000, attn_implementation="sdpa")
    else:
        config = Qwen3Config(hidden_size=256, intermediate_size=768, num_attention_heads=8, num_key_value_heads=4,
                             head_dim=64, num_hidden_layers=1, vocab_size=1000, attn_implementation="sdpa")
    model = AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    batch, tokens = 2, 128
    hidden = torch.randn(batch, tokens, config.hidden_size, dtype=torch.bfloat16, requires_grad=True)
    positions = torch.arange(tokens)[None].expand(batch, tokens)
    saved: dict[int, int] = {}

    def keep(tensor):
        pointer = tensor.untyped_storage().data_ptr()
        if pointer not in parameters:
            saved[pointer] = tensor.untyped_storage().nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
        model.model.layers[0](hidden, attention_mask=None, position_ids=positions,
                              position_embeddings=model.model.rotary_emb(hidden, positions))
    measured = sum(saved.values()) / (batch * tokens)
    estimate = ModelDims.from_config(config.to_dict()).layer_activation_bytes_per_token()
    assert measured == pytest.approx(estimate, rel=0.02)


# --- the paper's settings ---------------------------------------------------------------------------------------

def test_paper_updates_per_generation_batch_and_steps():
    """verl's PPO mini-batches: 4 updates per training step for tool calling, 8 for math; the ledger still counts
    the paper's training steps and batch of 512 prompts."""
    expected = {"paper-tool_calling": (4, 100, 512), "paper-math": (8, 500, 512), "paper-code": (1, 400, 32)}
    for name, (updates, steps, prompts) in expected.items():
        config = paper_config(name)
        assert updates_per_generation(config["training"]) == updates
        for described in describe_runs(config).values():
            assert (described["max_steps"], described["prompts_per_batch"]) == (steps, prompts)


def test_steps_per_generation_must_hold_whole_updates():
    with pytest.raises(ValueError, match="multiple of gradient_accumulation_steps"):
        updates_per_generation({"gradient_accumulation_steps": 8, "steps_per_generation": 12})


def test_code_length_limit_has_no_default():
    with pytest.raises(ValueError, match="length_limit"):
        check_required_options("code", {"family": "code"})
    config = paper_config("paper-code")
    assert {spec["length_limit"] for spec in config["tasks"].values()} == {4000}
    from gdpo.plan import plan_runs

    del config["tasks"]["code_r1_7b"]["length_limit"]
    with pytest.raises(ValueError, match="code_r1_7b.*length_limit"):
        plan_runs(config)


def test_fig6_sweep_runs_on_r1_7b():
    config = paper_config("paper-math")
    sweep = config["reporting"]["figures"]["fig6"]
    tasks = [task for variants in sweep.values() for task in variants.values()]
    assert {config["tasks"][task]["model"] for task in tasks} == {"deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"}


def test_bfcl_items_power_counts_are_the_evaluated_split():
    from gdpo.reporting.calibration import designs_from_config

    assert sum(BFCL_V3_CATEGORY_SIZES.values()) + BFCL_V3_MULTI_TURN_ITEMS == 4441  # the paper's BFCL-v3
    assert held_out_items() == 729
    design = designs_from_config(paper_config("paper-tool_calling"))["C3"]
    assert design.items == 729


def test_runs_log_once_per_generation_batch_and_pass_steps_per_generation_to_trl():
    """TRL logs the rewards only at the first update after a generation; the run logs every that many updates, and
    TRL's GRPOConfig receives steps_per_generation as the config sets it."""
    from gdpo.plan import resolve_run_settings
    from gdpo.training.run import trl_arguments

    config = paper_config("paper-math")
    settings = resolve_run_settings(config, "math_r1_1.5b", "gdpo", 0)
    arguments = trl_arguments(settings, "work")
    assert arguments["logging_steps"] == 8 and arguments["steps_per_generation"] == 1024
    assert arguments["gradient_accumulation_steps"] == 128 and arguments["max_steps"] == 4000
    config["training"]["save_steps"] = 60  # not a multiple of the 8 updates per generation batch
    with pytest.raises(ValueError, match="save_steps 60 must be a multiple of the 8"):
        resolve_run_settings(config, "math_r1_1.5b", "gdpo", 0)


def test_an_unset_vllm_context_is_the_models_own():
    """Without vllm_max_model_length, vLLM serves the model's full context: Qwen3-4B's 262,144 tokens do not fit
    TRL's default 30 % share, as the issue found."""
    config = paper_config("paper-math")
    for key in ("vllm_max_model_length", "vllm_gpu_memory_utilization"):
        del config["training"][key]
    plan = plan_training(config, "math_qwen3_4b")
    assert any("fewer than one sequence of 262,144" in problem for problem in plan.problems)


# --- the plan against the GPU records and the terms behind it ---------------------------------------------------

GPU_RECORDS = sorted((REPO / "benchmarks" / "reference").glob("gpu_check-*.jsonl"))


def test_a_gpu_record_is_committed():
    assert GPU_RECORDS


@pytest.mark.parametrize("record", GPU_RECORDS, ids=lambda path: path.name)
def test_every_committed_gpu_record_is_within_the_plan(record):
    """`benchmarks/gpu_check.py --replan` on the CPU: every training peak and every evaluation's own peak, × (1 +
    RECORD_MARGIN), within the current plan of the record's shapes. A peak that is the memory resident when the
    peak counter was reset (only in records taken before the check collected garbage first) is no training peak,
    and stays explained: within the tolerance of the models then resident."""
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_check.py"), "--replan", str(record)],
                            check=False, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    lines = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert [row["task"] for row in rows] == [line["task"] for line in lines]
    for row, line in zip(rows, lines, strict=True):
        if "train_peak_gib" not in line:
            continue
        assert row["holds"] and row["plan_train_gib"] > 0, row
        if row["train_peak_is"] == "training":
            assert row["plan_train_gib"] >= row["train_peak_gib"] * (1 + RECORD_MARGIN), row
        else:
            assert "train_start_gib" not in line, row
            assert 0 <= row["train_peak_gib"] - row["resident_at_reset_gib"] <= 0.25, row
        assert row["plan_eval_gib"] >= row["eval_peak_own_gib"] * (1 + RECORD_MARGIN), row


@pytest.mark.parametrize("tied", [True, False])
def test_tied_embeddings_hold_two_more_vocabulary_matrices_at_the_end_of_backward(tied):
    """Vocabulary-sized (V × h) tensors alive at once during a bfloat16 backward pass, parameters left out, less
    the parameters' own gradients: two with tied embeddings (the head's gradient kept until the embedding's, and
    their sum), none untied: the plan's "tied-embedding gradients" line (CPU; an in-place sum could only make
    it one)."""
    import weakref

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                         num_hidden_layers=1, vocab_size=5000, tie_word_embeddings=tied)
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    shape = (config.vocab_size, config.hidden_size)
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    alive: set[int] = set()
    most = 0

    class CountVocabularyMatrices(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            nonlocal most
            out = func(*args, **(kwargs or {}))
            for tensor in out if isinstance(out, (tuple, list)) else (out,):
                if not isinstance(tensor, torch.Tensor) or tuple(tensor.shape) != shape:
                    continue
                storage = tensor.untyped_storage()
                if storage.data_ptr() in parameters or id(storage) in alive:
                    continue
                alive.add(id(storage))
                weakref.finalize(storage, alive.discard, id(storage))
                most = max(most, len(alive))
            return out

    ids = torch.randint(0, config.vocab_size, (1, 16))
    loss = model(ids, labels=ids).loss
    with CountVocabularyMatrices():
        loss.backward()
    matrices = 1 if tied else 2  # the gradients the model states count
    assert most - matrices == (2 if tied else 0)
    one_task = {"tasks": {"t": {"model": "x"}}, "training": {"per_device_train_batch_size": 1}, "gpu": {}}
    lines = {line.what: line.bytes for line in plan_training(one_task, "t", dims=ModelDims.from_config(
        config.to_dict())).lines}
    assert lines.get("tied-embedding gradients", 0) == (2 * config.vocab_size * config.hidden_size * BF16 if tied else 0)


def test_a_model_with_trls_fused_head_stays_until_the_garbage_collector_runs():
    """Why benchmarks/gpu_check.py collects garbage before resetting a peak counter: TRL's fused LM head binds the
    model's ``forward`` to the model, a reference cycle, so a dropped model keeps its memory until a collection
    (the transformers Trainer runs one only once training has started)."""
    import gc
    import weakref

    from transformers import Qwen2Config, Qwen2ForCausalLM
    from trl.trainer.utils import add_fused_lm_head

    model = Qwen2ForCausalLM(Qwen2Config(hidden_size=32, intermediate_size=64, num_attention_heads=2,
                                         num_key_value_heads=1, num_hidden_layers=1, vocab_size=100))
    add_fused_lm_head(model)
    alive = weakref.ref(model)
    gc.disable()
    try:
        del model
        assert alive() is not None
        gc.collect()
        assert alive() is None
    finally:
        gc.enable()
