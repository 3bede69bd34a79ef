"""The tracer's preload of the libraries kernels may import (``preload_allowed`` in
``evaluator/sandbox/tracer.py``), tested without the optional extra: a stand-in package of the
same import shape as Tokamax (its import pulls in ``multiprocessing``, as Tokamax's autotuner
does) is put on the tracer's path. Imported before lock-down and the seal, the kernel that uses
it is `correct`; a module the walk leaves out cannot be loaded after the seal."""

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
    "tests/__init__.py": "",
    "tests/late.py": "LATE = True\n",
    # a library's test module next to its code (Tokamax's ``*_test.py``): left out of the walk
    "ops_test.py": "import jax\n\njax.config.update('jax_enable_x64', True)\n",
    # a module that changes JAX's global config when imported: the preload sets it back
    "_src/widen.py": "import jax\n\njax.config.update('jax_enable_x64', True)\n",
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


def test_every_allowed_library_is_imported_before_the_seal(library_evaluator):
    """einops too (every library on the import allow-list is loaded before the seal, since no
    file can be opened after it)."""
    result = library_evaluator.evaluate(_candidate("einops"), TASK, trials=1, tpu_interpret=False)
    assert result.status == "correct", f"{result.stage}: {result.message}"


def test_a_module_left_out_of_the_preload_is_a_named_compile_error(library_evaluator):
    """A module of an allowed library that the tracer did not load before its seal (a test
    module, left out of the walk) cannot be imported afterwards: a compile_error naming it,
    not a crash and not `rejected`."""
    source = "import tokamax.tests.late  # noqa: F401\n" + SEED.read_text()
    result = library_evaluator.evaluate(source, TASK, trials=1, tpu_interpret=False)
    assert (result.status, result.rule) == ("compile_error", "unavailable_import"), result.message
    assert "'tokamax.tests" in result.message and "sealed sandbox" in result.message


def test_a_library_module_changing_jax_config_does_not_change_the_trace(library_evaluator):
    """A module of the walk turned 64-bit mode on (Tokamax's test modules did, on a TPU host:
    every kernel traced afterwards had 64-bit index maps, which Mosaic refused on the chip): the
    preload sets JAX's config back, so the kernel traces with JAX's defaults."""
    source = ("import jax.numpy as jnp\n\nassert jnp.asarray(0).dtype == jnp.int32\n"
              + SEED.read_text())
    result = library_evaluator.evaluate(source, TASK, trials=1, tpu_interpret=False)
    assert result.status == "correct", f"{result.stage}: {result.message}"


def test_a_librarys_test_module_is_not_preloaded(library_evaluator):
    source = "import tokamax.ops_test  # noqa: F401\n" + SEED.read_text()
    result = library_evaluator.evaluate(source, TASK, trials=1, tpu_interpret=False)
    assert (result.status, result.rule) == ("compile_error", "unavailable_import"), result.message


def test_a_left_out_package_is_never_imported(library_evaluator):
    """The walk never imports a package it leaves out (``pkgutil.walk_packages`` imported each
    package it met, the left-out ones too: einops' tests imported torch into every fork
    server), so a kernel cannot import it either."""
    source = "import tokamax.tests  # noqa: F401\n" + SEED.read_text()
    result = library_evaluator.evaluate(source, TASK, trials=1, tpu_interpret=False)
    assert (result.status, result.rule) == ("compile_error", "unavailable_import"), result.message
