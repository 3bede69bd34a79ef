"""``jaxbench serve --executor ray``: the service's evaluations as Ray tasks on a local cluster
the service starts itself (about a minute on 2 cores, most of it Ray starting)."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")
pytest.importorskip("ray")

from serve_helpers import NORM_SEED, Server, evaluations_of, variant  # noqa: E402


def test_service_evaluates_on_a_ray_cluster(tmp_path):
    from jaxbench.serve import Client

    server = Server(tmp_path / "run", "--executor", "ray", "--ray-address", "local", "--workers", "1",
                    start_timeout_s=300)
    try:
        with Client(server.url, retries=0) as c:
            health = c.health()
            view = c.evaluate(variant(NORM_SEED, "ray"), "12p_rmsnorm", timeout_s=600)
            hostile = c.evaluate("import os\n\ndef kernel(x, w):\n    return x\n", "12p_rmsnorm")
    finally:
        server.stop(timeout_s=120)
    assert health["executor"] == "ray"
    assert view.status == "correct" and view.result.ray_node, view
    assert hostile.status == "rejected" and hostile.reward_value == -1.0
    assert evaluations_of(server.out, view.source_sha256) == 1
