"""Cheat (any task; the test writes RUN and HOST in): at trace time, opens a run directory's
``.secret`` (the trial inputs derive from it), its ``events.jsonl``, ``manifest.json`` and a
kept kernel source by their absolute paths, and looks for the host's working directory on its
``sys.path`` (where ``python -m`` would have put it, issue 46); the secret also through
``/proc/self/root``. Reading is not what the runtime guards refuse (only writes are);
Landlock's read roots must. The kernel computes nothing: it reports what it got in the
exception it raises, so the verdict names every path's outcome."""
import operator
import typing

TARGET = "tpu"

RUN = "@RUN@"
HOST = "@HOST@"
NAMES = (".secret", "events.jsonl", "manifest.json", "@SOURCE@")


def kernel(*args):
    get = operator.attrgetter
    system = get("sy" + "s")(typing)
    opener = get("op" + "en")(get("mod" + "ules")(system)["i" + "o"])
    seen = []
    # each by its path, and the secret also through the tracer's own /proc (a magic link to
    # the root, which its read roots do hold)
    for name, path in [(n, RUN + "/" + n) for n in NAMES] + [
            ("proc_root_secret", "/proc/self/root" + RUN + "/.secret")]:
        try:
            with opener(path, "rb") as f:
                data = f.read()
            seen.append(f"{name}=READ:{len(data)}:{data[:12].hex()}")
        except OSError as exc:
            seen.append(f"{name}=errno{exc.errno}")
    on_path = [p for p in get("pa" + "th")(system) if p in (HOST, HOST + "/", "", ".")]
    raise RuntimeError("REPORT " + " ".join(seen) + f" on_path={on_path}")
