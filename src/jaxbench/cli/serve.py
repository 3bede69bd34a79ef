"""``jaxbench serve``: the judge as an HTTP service (docs/serve.md)."""

from __future__ import annotations

from pathlib import Path

import click

from jaxbench.cli.common import MODE, executor_options, sealed_command
from jaxbench.cli.terminal import usage_error


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (not a loopback one: tokens are required).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="Port (0: a free one, printed).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("runs/serve"), show_default=True,
              help="Run directory: every submission and verdict; a restart resumes from it.")
@click.option("--workers", type=click.IntRange(1, 256), default=None,
              help="Evaluations at once (default: min(4, CPUs); with --executor ray, the "
                   "cluster's CPU slots).")
@click.option("--mode", type=MODE, default="auto", show_default=True,
              help="Mode of submissions that do not name one.")
@click.option("--tokens", "tokens_file", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Bearer tokens, one per line (name:token [quota=N] [concurrency=M]); "
                                 "default: JAXBENCH_SERVE_TOKENS.")
@click.option("--quota", type=click.IntRange(1), default=None,
              help="Submissions per caller per --quota-window (default: unlimited).")
@click.option("--quota-window", type=click.FloatRange(1), default=3600.0, show_default=True,
              help="Seconds.")
@click.option("--concurrency", type=click.IntRange(1), default=None,
              help="Unfinished submissions per caller (default: unlimited).")
@click.option("--max-source-bytes", type=click.IntRange(1024), default=256 * 1024, show_default=True)
@click.option("--max-batch", type=click.IntRange(1), default=256, show_default=True)
@click.option("--rewards", "rewards_file", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="A reward table (JSON; docs/serve.md), instead of the default.")
@click.option("--no-cache", is_flag=True, help="Evaluate every submission, even a kernel already judged.")
@click.option("--no-openenv", is_flag=True, help="Do not mount the OpenEnv environment at /openenv.")
@click.option("--insecure-no-auth", is_flag=True,
              help="Allow a non-loopback --host without tokens (anyone who reaches it may submit).")
@executor_options
@sealed_command
def serve_cmd(host: str, port: int, out_dir: Path, workers: int | None, mode: str,
              tokens_file: Path | None, quota: int | None, quota_window: float,
              concurrency: int | None, max_source_bytes: int, max_batch: int,
              rewards_file: Path | None, no_cache: bool, no_openenv: bool, insecure_no_auth: bool,
              executor: str, ray_address: str | None) -> None:
    """Serve the judge over HTTP: submit kernels, stream verdicts and rewards.

    Stops on Ctrl-C or SIGTERM; queued work stays in the run directory and resumes on restart."""
    from jaxbench.serve import missing_extra

    missing = missing_extra()
    if missing:
        usage_error(f"jaxbench serve needs the serve extra ({missing} is not installed): "
                    "pip install -e '.[serve]'")
    from jaxbench.executors import ExecutorError, check_executor
    from jaxbench.runs import RunError, default_workers
    from jaxbench.serve import RewardTable, ServeConfig, ServeSetupError, TokenError, load_tokens, run_server

    try:
        tokens = load_tokens(tokens_file)
        rewards = RewardTable.from_file(rewards_file) if rewards_file else RewardTable()
    except (TokenError, ValueError, OSError) as exc:
        usage_error(str(exc))
    try:
        check_executor(executor, ray_address, "interpret", ["tpu"])
    except ExecutorError as exc:
        usage_error(str(exc))
    if workers is None:
        workers = default_workers()
        if executor == "ray":
            from jaxbench.executors import cluster_slots, make_evaluator

            workers = cluster_slots(make_evaluator("ray", b"\0" * 32, ray_address=ray_address),
                                    "interpret", ["tpu"]) or workers
    config = ServeConfig(out=out_dir, executor=executor, ray_address=ray_address, workers=workers,
                         default_mode=mode, max_source_bytes=max_source_bytes, max_batch=max_batch,
                         quota=quota, quota_window_s=quota_window, concurrency=concurrency,
                         cache=not no_cache, rewards=rewards)
    try:
        run_server(config, tokens, host=host, port=port, allow_open=insecure_no_auth,
                   openenv=not no_openenv)
    except (ServeSetupError, RunError) as exc:
        usage_error(str(exc))
