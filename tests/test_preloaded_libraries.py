"""The tracer's exemption for installed kernel libraries (``_PRELOADED_ROOTS`` in
``evaluator/sandbox/tracer.py``), tested without the optional extra: a stand-in package of the
same import shape as Tokamax (its import pulls in ``multiprocessing``, as Tokamax's autotuner
does) is put on the tracer's path. Under the exempt root it is imported before lock-down and
the kernel that uses it is `correct`; the same package under a root that is not exempt is
imported with candidate code on the stack, and the sandbox refuses it."""

import textwrap

import pytest

from jaxbench.tasks import get_task

TASK = "12p_rmsnorm"
SEED = get_task(TASK).kernel_files()[("seed", "tpu")]
PACKAGE = {
    "__init__.py": "from . import _src\nfrom ._src.autotune import TUNED\n",
    "_src/__init__.py": "",
    # the import shape that needs the exemption: a library module loading multiprocessing
    "_src/autotune.py": "import multiprocessing\n\nTUNED = multiprocessing.cpu_count() > 0\n",
}


def _stand_in(root, name):
    for relative, text in PACKAGE.items():
        path = root / name / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _candidate(name):
    use = textwrap.dedent(f"""
        import {name}

        assert {name}.TUNED
    """)
    return use + SEED.read_text()


@pytest.fixture(scope="module")
def library_evaluator(tmp_path_factory):
    """An evaluator whose tracers find the stand-ins first on their path (PYTHONPATH is one of
    the few variables a tracer keeps) and may read them (JAXBENCH_TRACER_LIBRARY_PATH: a
    tracer reads no PYTHONPATH entry outside the installation otherwise)."""
    import os

    from jaxbench.evaluator import Evaluator

    root = tmp_path_factory.mktemp("libraries")
    _stand_in(root, "tokamax")  # exempt
    _stand_in(root, "einops")  # on the import allow-list, not exempt
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(root)] + ([old] if old else []))
    os.environ["JAXBENCH_TRACER_LIBRARY_PATH"] = str(root)
    try:
        with Evaluator(spares=0) as ev:
            yield ev
    finally:
        os.environ.pop("JAXBENCH_TRACER_LIBRARY_PATH")
        if old is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = old


def test_exempt_library_is_imported_before_lock_down(library_evaluator):
    result = library_evaluator.evaluate(_candidate("tokamax"), TASK, trials=1,
                                        tpu_interpret=False)
    assert result.status == "correct", f"{result.stage}: {result.message}"


def test_same_library_under_another_root_is_refused(library_evaluator):
    result = library_evaluator.evaluate(_candidate("einops"), TASK, trials=1, tpu_interpret=False)
    assert (result.status, result.stage) == ("rejected", "trace"), result.message
    assert "multiprocessing" in result.message
