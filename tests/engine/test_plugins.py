"""One registry idiom (``engine.plugins``): strategies, backends and simulator tasks are found
through entry points, the built-ins included, whatever was imported first."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from unseen.backends import make_backend, providers
from unseen.backends.base import PROVIDERS
from unseen.engine.oracle import TASKS
from unseen.engine.plugins import PluginError, Registry
from unseen.engine.types import Message, Request, TextPart

ROOT = Path(__file__).resolve().parents[2]  # tests/engine/ → the repository


def install(tmp_path: Path, monkeypatch, group: str, modules: dict[str, str]) -> None:
    """A package installed on ``sys.path`` whose modules are listed under ``group``, as
    pip would leave it (a ``.dist-info`` folder with ``entry_points.txt``)."""
    for name, code in modules.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(code), encoding="utf-8")
    dist = tmp_path / "outside_pkg-0.1.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: outside-pkg\nVersion: 0.1\n")
    lines = "".join(f"{name.replace('_', '-')} = {name}\n" for name in modules)
    (dist / "entry_points.txt").write_text(f"[{group}]\n{lines}")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in modules:
        monkeypatch.delitem(sys.modules, name, raising=False)


def test_the_built_ins_are_entry_points_like_any_plug_in():
    from importlib.metadata import entry_points

    def named(group):
        return {ep.value for ep in entry_points(group=group)}

    assert {"unseen.strategies.direct", "unseen.strategies.spoe",
            "unseen.evals.director.task.strategy"} <= named("unseen.strategies")
    assert {"unseen.backends.sim", "unseen.backends.openai_chat",
            "unseen.backends.gemini"} <= named("unseen.backends")
    assert {"unseen.backends.sim_tasks", "unseen.evals.director.sim_tasks"} <= named(
        "unseen.sim_tasks")


def test_what_sim_knows_does_not_depend_on_what_was_imported():
    """A fresh interpreter that imports only the backends: sim answers the Director's tasks
    and takes its profiles (before, only after ``import unseen.director``)."""
    code = textwrap.dedent("""
        import sys
        from unseen.backends import make_backend
        sim = make_backend("sim:director-strong,dir_uplift=0.3")
        assert "unseen.commands.director_run" not in sys.modules
        assert "unseen.commands.director_code" not in sys.modules
        print(sorted(sim.answers), sim.extra("dir_").uplift)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=300, check=True).stdout
    assert out.split() == ["['box',", "'cells',", "'choice',", "'director',", "'director-code']",
                           "0.3"]


def test_an_outside_package_adds_a_backend_by_entry_point(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, "unseen.backends", {"outside_backend": '''
        from unseen.backends.base import BaseBackend, provider
        from unseen.engine.types import Reply

        class Echo(BaseBackend):
            provider = "echo"

            async def complete(self, request):
                return Reply(text=request.messages[-1].text)

        @provider("echo", "echo:MODEL  (says what it is told)")
        def _echo(target, *, spec, **_):
            return Echo(target or "echo", spec=spec)
    '''})
    PROVIDERS.refresh()  # installed after the first lookup
    try:
        assert providers()["echo"] == "echo:MODEL  (says what it is told)"
        backend = make_backend("echo:parrot")
        assert backend.model == "parrot" and backend.spec == "echo:parrot"
    finally:
        del PROVIDERS["echo"]


async def test_an_outside_package_adds_a_kind_and_its_sim_task(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, "unseen.sim_tasks", {"outside_task": '''
        from typing import Literal
        from unseen.engine.oracle import Truth, sim_task

        class PointTruth(Truth):
            task: Literal["point"] = "point"
            x: int
            y: int

        @sim_task("point")
        def answer(sim, truth, rng):
            return f"{truth.x},{truth.y}"
    '''})
    TASKS.refresh()
    try:
        assert "point" in make_backend("sim").answers
        request = Request(messages=[Message(role="user", parts=[TextPart(text="where?")])],
                          oracle={"task": "point", "x": 3, "y": 4})
        assert (await make_backend("sim").complete(request)).text == "3,4"
    finally:
        del TASKS["point"]


def test_a_registration_in_process_wins_whenever_the_group_loads(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, "unseen.test_group", {"group_mod": '''
        from unseen.engine.plugins import Registry
        import registry_holder
        registry_holder.REG["x"] = "from the group"
        registry_holder.REG["y"] = "from the group"
    '''})
    reg: Registry[str] = Registry("unseen.test_group", "thing")
    holder = tmp_path / "registry_holder.py"
    holder.write_text("REG = None\n")
    import registry_holder

    monkeypatch.setattr(registry_holder, "REG", reg)
    try:
        reg["x"] = "in process, before the load"  # no load yet: registering imports nothing
        assert "group_mod" not in sys.modules
        assert reg["x"] == "in process, before the load"  # the lookup loads the group
        assert reg["y"] == "from the group"
        reg["y"] = "in process, after the load"
        assert dict(reg) == {"x": "in process, before the load", "y": "in process, after the load"}
        assert reg.unknown("z") == "unknown thing 'z'; known: x, y"
    finally:
        sys.modules.pop("registry_holder", None)
        sys.modules.pop("group_mod", None)


def test_an_entry_point_may_name_the_object_itself(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, "unseen.test_objects", {"object_mod": "THING = 'an object'\n"})
    dist = next(tmp_path.glob("*.dist-info"))
    (dist / "entry_points.txt").write_text("[unseen.test_objects]\nthing = object_mod:THING\n")
    reg: Registry[str] = Registry("unseen.test_objects", "thing")
    assert dict(reg) == {"thing": "an object"}


def test_a_broken_plug_in_names_itself_in_one_line(tmp_path, monkeypatch):
    install(tmp_path, monkeypatch, "unseen.test_broken", {"broken_mod": "import no_such_module\n"})
    reg: Registry[str] = Registry("unseen.test_broken", "thing")
    with pytest.raises(PluginError) as exc:
        reg.load()
    msg = str(exc.value)
    assert msg.startswith("entry point broken-mod = broken_mod of unseen.test_broken cannot be "
                          "loaded: ModuleNotFoundError") and "\n" not in msg


def test_a_lookup_from_another_thread_waits_for_the_group_to_load(monkeypatch):
    """Overlays are drawn off the event loop, so the renderer's registry is asked from
    several threads at once; one saw it marked loaded before anything had registered and a
    fresh ``spoe`` run failed most trajectories with "no overlay renderer". A lookup while
    another thread loads the group now waits for it."""
    import threading
    import time

    from unseen.engine import plugins

    reg: Registry[str] = Registry("unseen.test-slow", "thing")
    started = threading.Event()

    class SlowEntry:
        name, value, attr = "slow", "slow_module:THING", "THING"

        def load(self):
            started.set()
            time.sleep(0.3)  # the other thread asks meanwhile
            return "the thing"

    monkeypatch.setattr(plugins, "entry_points", lambda group: [SlowEntry()])
    seen: dict[str, bool] = {}
    first = threading.Thread(target=lambda: seen.setdefault("first", "slow" in reg))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=lambda: seen.setdefault("second", "slow" in reg))
    second.start()
    first.join(10)
    second.join(10)
    assert seen == {"first": True, "second": True}
    assert reg["slow"] == "the thing"


def test_a_group_that_failed_to_load_fails_again_rather_than_looking_empty(monkeypatch):
    from unseen.engine import plugins

    class Broken:
        name, value, attr = "broken", "broken_module", None

        def load(self):
            raise ImportError("no module named broken_module")

    monkeypatch.setattr(plugins, "entry_points", lambda group: [Broken()])
    reg: Registry[str] = Registry("unseen.test-broken", "thing")
    for _ in range(2):
        with pytest.raises(PluginError, match="broken_module"):
            "x" in reg  # noqa: B015 - the lookup is what raises
