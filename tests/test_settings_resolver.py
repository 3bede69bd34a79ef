"""Settings are resolved once, by the evaluator's resolver (``evaluator.parent.case.resolve_case``):
the front doors (``jaxbench eval``, ``serve``'s admission) refuse with its words, and an
evaluation resolves with it."""

import pytest

from jaxbench.contract import Mode, Settings, Target
from jaxbench.evaluator import resolve_case
from jaxbench.serve.admission import Admission
from jaxbench.serve.auth import Principal
from jaxbench.serve.config import Request, ServeConfig, ServeError
from jaxbench.tasks import get_task

pytestmark = pytest.mark.quick

GPU_KERNEL = 'TARGET = "gpu"\n\ndef kernel(a, b):\n    return a\n'
GEMM = get_task("8p_gemm")


def test_the_kernels_target_is_used_unless_one_is_asked():
    case = resolve_case(GEMM, Settings.of(mode="interpret"), GPU_KERNEL)
    assert (case.target, case.mode, case.assumed_target) == (Target.GPU, Mode.INTERPRET, False)
    assert resolve_case(GEMM, Settings.of(mode="interpret"), "x = 1\n").assumed_target


@pytest.mark.parametrize("source, words", [
    (GPU_KERNEL, "target tpu contradicts the kernel's TARGET = \"gpu\""),
    ('TARGET = "cuda"\n', "is not \"tpu\" or \"gpu\""),
])
def test_a_front_door_refuses_what_an_evaluation_judges(source, words):
    settings = Settings.of(target="tpu", mode="interpret")
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        resolve_case(GEMM, settings, source, front_door=True)
    # inside an evaluation the kernel's own TARGET is its fault: a verdict, not an exception
    assert resolve_case(GEMM, settings, source).target == Target.TPU


def test_serve_refuses_with_the_resolvers_words():
    admission = Admission(ServeConfig(default_mode="interpret"))
    request = Request(task="8p_gemm", source=GPU_KERNEL, target="tpu")
    with pytest.raises(ServeError) as refused:
        admission.prepare(request, Principal("alice"), None)
    with pytest.raises(ValueError) as resolver:
        resolve_case(GEMM, Settings.of(target="tpu", mode="interpret"), GPU_KERNEL,
                     front_door=True)
    assert refused.value.status == 422 and str(resolver.value) in str(refused.value)


def test_a_cluster_resolves_the_mode_and_the_chip_is_the_one_asked_for():
    asked = []

    def on_the_cluster(mode, target):
        asked.append((mode, target))
        return "device"

    case = resolve_case(GEMM, Settings.of(mode="auto", chip="v5e"), "x = 1\n",
                        mode_of=on_the_cluster)
    assert asked == [("auto", "tpu")] and case.mode == Mode.DEVICE
    assert case.chip == "TPU v5 lite"  # never this host's (it has no chip)


def test_serve_carries_the_settings_it_resolved_to_the_evaluator(tmp_path):
    """Admission resolves a submission's settings once (target, mode, chip, fresh keys); the
    worker hands that object to the evaluator as it is, and a restart reads the same back."""
    from jaxbench.serve.store import Submission
    from jaxbench.serve.workers import Workers

    admission = Admission(ServeConfig(default_mode="interpret"))
    request = Request(task="8p_gemm", source=GPU_KERNEL, chip="a100", trials=2)
    sub, _ = admission.prepare(request, Principal("alice"), None)
    assert (sub.settings.target, sub.settings.mode, sub.settings.chip) == (
        Target.GPU, Mode.INTERPRET, "NVIDIA A100")
    assert sub.settings.fresh_keys and sub.settings.trials == 2 and sub.mode == "interpret"
    assert Submission.from_event(sub.event()).settings == sub.settings

    seen = []

    class Recording:
        def evaluate(self, source, task_id, settings=None):
            seen.append(settings)
            raise RuntimeError("stop here")

    workers = Workers.__new__(Workers)
    workers.store = type("S", (), {"source": lambda self, s: GPU_KERNEL})()
    workers._evaluate(Recording(), sub)
    assert seen and seen[0] is sub.settings


def test_jaxbench_eval_resolves_its_case_once_and_carries_it(monkeypatch):
    """``jaxbench eval`` resolves the case at its front door and hands that object to the
    evaluator (``evaluate_case``), which evaluates it without resolving it again."""
    from click.testing import CliRunner

    import jaxbench.evaluator as evaluator_module
    from jaxbench.cli import main
    from jaxbench.evaluator.parent import evaluator as parent_module

    made, carried = [], []
    resolve = evaluator_module.resolve_case

    def counted(*args, **kwargs):
        made.append(resolve(*args, **kwargs))
        return made[-1]

    def stop(self, source, filename, case):
        carried.append(case)
        raise RuntimeError("stopped before the walk")

    monkeypatch.setattr(evaluator_module, "resolve_case", counted)
    monkeypatch.setattr(parent_module, "resolve_case", counted)
    monkeypatch.setattr(parent_module.Evaluator, "_evaluate", stop)
    seed = GEMM.folder / "seed_gpu.py"
    out = CliRunner().invoke(main, ["eval", str(seed), "--task", "8p_gemm", "--mode",
                                    "interpret", "--trials", "1"])
    assert "stopped before the walk" in out.output, out.output
    assert len(made) == 1 and carried == made and carried[0] is made[0]
