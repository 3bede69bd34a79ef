"""GRPO with TRL against a running ``jaxbench serve``: the loop as a user runs it.

    pip install -e '.[serve,rl]'       # torch 2.13.0 (the CPU build), trl, transformers
    JAX_PLATFORMS=cpu jaxbench serve &  # the judge, http://127.0.0.1:8000
    python examples/grpo_trl.py --model Qwen/Qwen2.5-0.5B-Instruct --tasks 12p_rmsnorm,8p_gemm

The dataset is built from the service's tasks: one row per task (``--repeat`` times), its
``prompt`` the service's prompt for the task (``GET /v1/tasks/{task}``: the task statement and
the answer format; as a one-message conversation when the tokenizer has a chat template) and
its ``task`` column the task ID, which ``KernelReward`` reads. The reward function is
``jaxbench.serve.KernelReward`` passed to ``GRPOTrainer`` as it is. Each logging step shows the
mean reward and the share of each verdict status (``jaxbench/correct``,
``jaxbench/compile_error``, ..., ``jaxbench/unjudged``: completions the judge did not answer in
time, left out of the group's baseline).

The service is ``--url`` (default ``$JAXBENCH_SERVE_URL``, else http://127.0.0.1:8000) with
``--token`` (default ``$JAXBENCH_SERVE_TOKEN``). ``--model tiny-random`` trains a random 2-layer
Llama with a byte-level tokenizer built in-process (nothing downloaded): it writes junk, so
every verdict is a failure, but it runs the whole loop in well under a minute on a CPU.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

DEFAULT_TASKS = "12p_rmsnorm,8p_gemm"


def build_dataset(client: Any, tasks: list[str], *, target: str = "tpu", size: str = "small",
                  mode: str = "interpret", conversational: bool = False, repeat: int = 1) -> Any:
    """The training set: a ``prompt`` column (the service's prompt for each task) and a ``task``
    column (its ID, which the reward reads). ``client`` is a :class:`jaxbench.serve.Client`."""
    from datasets import Dataset

    rows: dict[str, list[Any]] = {"prompt": [], "task": []}
    for task in tasks:
        prompt = client.task(task, target=target, size=size, mode=mode)["prompt"]
        for _ in range(repeat):
            rows["prompt"].append([{"role": "user", "content": prompt}] if conversational else prompt)
            rows["task"].append(task)
    return Dataset.from_dict(rows)


def byte_tokenizer() -> Any:
    """A byte-level tokenizer (256 byte tokens, ``<eos>`` and ``<pad>``) built in-process."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {symbol: i for i, symbol in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    vocab.update({"<eos>": len(vocab), "<pad>": len(vocab) + 1})
    inner = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    inner.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    inner.decoder = decoders.ByteLevel()
    inner.add_special_tokens(["<eos>", "<pad>"])
    return PreTrainedTokenizerFast(tokenizer_object=inner, eos_token="<eos>", pad_token="<pad>")


def tiny_model(seed: int = 0) -> tuple[Any, Any]:
    """A random 2-layer Llama (hidden size 32) and :func:`byte_tokenizer`: the loop's smoke test."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = byte_tokenizer()
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                         max_position_embeddings=16384, bos_token_id=None,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    return LlamaForCausalLM(config), tokenizer


def verdict_log() -> Any:
    """A trainer callback that prints each logging step's reward and verdict shares in one line."""
    from transformers import TrainerCallback

    class VerdictLog(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                   **kwargs: Any) -> None:
            if not logs or "reward" not in logs:
                return
            shares = ", ".join(f"{name.split('/', 1)[1]} {value:.2f}" for name, value in sorted(logs.items())
                               if name.startswith("jaxbench/") and value)
            print(f"step {state.global_step}: reward {logs['reward']:.3f} ({shares})", flush=True)

    return VerdictLog()


def make_trainer(model: Any, tokenizer: Any, dataset: Any, reward: Any, *, output_dir: str,
                 steps: int = 1, num_generations: int = 4, prompts_per_step: int = 1,
                 max_completion_length: int = 256, learning_rate: float = 1e-5,
                 rollout_func: Any = None, callbacks: list[Any] | None = None, **config: Any) -> Any:
    """A ``GRPOTrainer`` on the CPU or the accelerator torch finds, the reward passed as is."""
    import torch
    from trl import GRPOConfig, GRPOTrainer

    on_gpu = torch.cuda.is_available()
    config.setdefault("use_cpu", not on_gpu)
    config.setdefault("bf16", on_gpu and torch.cuda.is_bf16_supported())  # GRPOConfig's default needs a GPU
    args = GRPOConfig(output_dir=output_dir, max_steps=steps, learning_rate=learning_rate,
                      num_generations=num_generations,
                      per_device_train_batch_size=num_generations * prompts_per_step,
                      max_completion_length=max_completion_length, logging_steps=1,
                      save_strategy="no", report_to="none", disable_tqdm=True, seed=0, **config)
    options: dict[str, Any] = {"rollout_func": rollout_func} if rollout_func is not None else {}
    return GRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=dataset,
                       processing_class=tokenizer, callbacks=[verdict_log(), *(callbacks or [])], **options)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=os.environ.get("JAXBENCH_SERVE_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("JAXBENCH_SERVE_TOKEN"))
    parser.add_argument("--model", default="tiny-random",
                        help="a causal LM (Hugging Face name or path), or tiny-random")
    parser.add_argument("--tasks", default=DEFAULT_TASKS, help="comma-separated task IDs, or 'all'")
    parser.add_argument("--target", default="tpu", choices=("tpu", "gpu"))
    parser.add_argument("--size", default="small")
    parser.add_argument("--mode", default="interpret", choices=("interpret", "device", "auto"))
    parser.add_argument("--repeat", type=int, default=1, help="rows per task in the dataset")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--num-generations", type=int, default=4)
    parser.add_argument("--max-completion-length", type=int, default=256)
    parser.add_argument("--timeout-s", type=float, default=600.0,
                        help="how long a reward call waits for verdicts (then: unjudged, left out)")
    parser.add_argument("--output-dir", default="runs/grpo_trl")
    args = parser.parse_args(argv)

    from jaxbench.serve import Client, KernelReward

    started = time.monotonic()
    with Client(args.url, args.token) as judge:
        tasks = ([t["id"] for t in judge.tasks()] if args.tasks == "all"
                 else [t for t in args.tasks.split(",") if t])
        if args.model == "tiny-random":
            model, tokenizer = tiny_model()
        else:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            model = AutoModelForCausalLM.from_pretrained(args.model)
            tokenizer = AutoTokenizer.from_pretrained(args.model)
        dataset = build_dataset(judge, tasks, target=args.target, size=args.size, mode=args.mode,
                                conversational=getattr(tokenizer, "chat_template", None) is not None,
                                repeat=args.repeat)
    reward = KernelReward(args.url, args.token, target=args.target, size=args.size, mode=args.mode,
                          timeout_s=args.timeout_s)
    trainer = make_trainer(model, tokenizer, dataset, reward, output_dir=args.output_dir, steps=args.steps,
                           num_generations=args.num_generations,
                           max_completion_length=args.max_completion_length)
    trainer.train()
    print(f"done: {args.steps} steps in {time.monotonic() - started:.1f} s; outcomes "
          f"{dict(reward.outcomes)} (unjudged {reward.unjudged}, refused {reward.refused})", flush=True)
    reward.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
