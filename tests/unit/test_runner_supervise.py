"""One supervised attempt: bounded memory for a long event stream, the clock passed in, and
which session id an attempt adopts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rewake.runner.clis.providers import provider_named
from rewake.runner.process.attempts import Options, Runner, Step
from rewake.runner.process.supervise import (
    CONTROL_EVENTS,
    RECENT_EVENTS,
    EventWindow,
    Hooks,
    _Adopt,
    supervise,
)
from rewake.runner.store.records import RunRecord

claude = provider_named("claude")
FIXED = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_event_window_keeps_a_bounded_number_of_events() -> None:
    """100 000 content events and as many control events retain at most the two bounds, in
    order, the latest ones kept."""
    window = EventWindow()
    for n in range(100_000):
        window.add({"type": "assistant", "n": n})
        window.add({"type": "result", "n": n})
    kept = window.events()
    assert len(kept) == len(window) == CONTROL_EVENTS + RECENT_EVENTS
    assert kept[-1] == {"type": "result", "n": 99_999}
    assert [e["n"] for e in kept] == sorted(e["n"] for e in kept)


def test_supervise_retains_a_bounded_window_of_a_long_stream(tmp_path: Path) -> None:
    """A CLI printing 5 000 content events hands back no more than RECENT_EVENTS of them plus
    its control events; the log on disk keeps every line."""
    code = (
        "import json\n"
        "print(json.dumps({'type': 'system', 'subtype': 'init', 'session_id': 'abc'}))\n"
        "for n in range(5000): print(json.dumps({'type': 'assistant', 'n': n}))\n"
        "print(json.dumps({'type': 'result', 'is_error': False, 'session_id': 'abc'}))\n"
    )
    log = tmp_path / "a.log"
    done = supervise([sys.executable, "-c", code], provider=claude, cwd=str(tmp_path), log=log,
                     out=_Null(), err=_Null(), clock=lambda: FIXED)  # fmt: skip
    assert len(done.events) == RECENT_EVENTS + 2
    assert done.events[0]["type"] == "system" and done.events[-1]["type"] == "result"
    assert len(log.read_text().splitlines()) == 5002
    assert done.ended_at == FIXED  # the injected clock, read when the CLI exited


def test_a_failed_resume_never_adopts_the_id_of_its_error_result() -> None:
    """The "No conversation found" result's fresh id is not adopted (the CLI never proved the
    conversation under way); an init id is adopted once work shows."""
    seen: list[str] = []
    adopt = _Adopt(claude, Hooks(on_session=seen.append))
    adopt.feed({"type": "result", "is_error": True, "session_id": "fresh",
                "result": "No conversation found with session ID: old"})  # fmt: skip
    assert (adopt.session_id, seen) == (None, [])
    adopt = _Adopt(claude, Hooks(on_session=seen.append))
    adopt.feed({"type": "system", "subtype": "init", "session_id": "new1"})
    assert seen == []
    adopt.feed({"type": "assistant", "session_id": "new1"})
    adopt.feed({"type": "result", "is_error": True, "session_id": "other", "result": "429"})
    assert (adopt.session_id, seen) == ("new1", ["new1"])


class _Null:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


class _Store:
    actor = "local:test"

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def report_failure(self, root_id: str, run_id: str, body: Any) -> dict[str, Any]:
        self.bodies.append(dict(body))
        return {"banner": {}, "verdict": {}}


def test_the_runner_reads_the_injected_clock(tmp_path: Path, monkeypatch: Any) -> None:
    """A resume with no conversation id on record is reported at the Runner's clock, not at
    a datetime.now() read deep inside."""
    monkeypatch.setenv("REWAKE_STATE_DIR", str(tmp_path))
    record = RunRecord(root_id="c1", run_id="r1", provider="claude", cwd=str(tmp_path),
                       args=["-p", "x"])  # fmt: skip
    store = _Store()
    runner = Runner(store, record, claude, Options(clock=lambda: FIXED),  # type: ignore[arg-type]
                    out=_Null(), err=_Null())  # type: ignore[arg-type]  # fmt: skip
    assert runner.run(Step([], 2, started_when_proven=True, fresh_allowed=False)) == 4
    assert store.bodies[0]["observed_at"] == FIXED.isoformat()


class _DownStore(_Store):
    def report_failure(self, root_id: str, run_id: str, body: Any) -> dict[str, Any]:
        from rewake.runner.store.stores import StoreError

        raise StoreError("service_unreachable", "http://127.0.0.1:9: connection refused")


def test_a_report_the_store_cannot_take_goes_to_the_outbox(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """When the service is down after the CLI ran, the failure report is written to
    <state>/outbox/<root>-<run>-<attempt>.json and the terminal names the file."""
    from rewake.parsers.verdict import Verdict
    from rewake.runner.process.outcome import Classified
    from rewake.runner.process.supervise import Finished

    monkeypatch.setenv("REWAKE_STATE_DIR", str(tmp_path))
    record = RunRecord(root_id="o1", run_id="r1", provider="claude", cwd=str(tmp_path),
                       args=["-p", "x"])  # fmt: skip
    said: list[str] = []

    class _Out(_Null):
        def write(self, text: str) -> int:
            said.append(text)
            return len(text)

    runner = Runner(_DownStore(), record, claude, Options(clock=lambda: FIXED),  # type: ignore[arg-type]
                    out=_Out(), err=_Out())  # type: ignore[arg-type]  # fmt: skip
    finished = Finished(exit_code=1, events=[], tail="boom", session_id=None, started=True,
                        halted=False, ended_at=FIXED, log=tmp_path / "a.log")  # fmt: skip
    verdict = Classified(True, Verdict(kind="none"), False, None)
    assert runner._record_end(finished, verdict, 1) is None
    kept = tmp_path / "outbox" / "o1-r1-1.json"
    assert kept.exists() and str(kept) in "".join(said)


def test_the_supervised_cli_is_told_so_in_its_environment(tmp_path: Path) -> None:
    """Every CLI rewake run starts sees REWAKE_SUPERVISED=1, so its own globally configured
    `rewake hook` stays quiet instead of reporting the attempt a second time."""
    code = (
        "import json, os\n"
        "print(json.dumps({'type': 'system', 'subtype': 'init', 'session_id': 'abc',"
        " 'seen': os.environ.get('REWAKE_SUPERVISED')}))\n"
    )
    done = supervise([sys.executable, "-c", code], provider=claude, cwd=str(tmp_path),
                     log=tmp_path / "a.log", env={"PATH": os.environ.get("PATH", "")},
                     out=_Null(), err=_Null(), clock=lambda: FIXED)  # fmt: skip
    assert done.events[0]["seen"] == "1"


def test_a_stop_noted_before_the_spawn_starts_nothing(tmp_path: Path) -> None:
    """A stop signal that came while the attempt was being prepared (no group to signal yet)
    keeps the CLI from being spawned at all: supervise returns a halted, unstarted attempt."""
    from rewake.runner.process.supervise import StopSignals

    ran = tmp_path / "ran"
    stop = StopSignals(grace_s=1.0, requested=1, first_signal=signal.SIGINT)
    done = supervise([sys.executable, "-c", f"open({str(ran)!r}, 'w').close()"],
                     provider=claude, cwd=str(tmp_path), log=tmp_path / "a.log", out=_Null(),
                     err=_Null(), stop=stop, clock=lambda: FIXED)  # fmt: skip
    assert (done.halted, done.started, done.exit_code) == (True, False, -signal.SIGINT)
    assert not ran.exists()
    assert "before the CLI was spawned" in (tmp_path / "a.log").read_text()


def test_a_stop_noted_during_the_spawn_reaches_the_new_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signal handled after the not-yet-spawned check but before the group id is known is
    still delivered (SIGINT for Ctrl-C): the CLI is stopped within the grace, not run to its
    end."""
    from rewake.runner.process import supervise as module
    from rewake.runner.process.supervise import StopSignals

    stop = StopSignals(grace_s=1.0)
    popen = subprocess.Popen

    def spawn(*args: Any, **kwargs: Any) -> Any:
        child = popen(*args, **kwargs)
        stop._on_signal(signal.SIGINT, None)  # as the handler would run here: no pgid yet
        return child

    monkeypatch.setattr(module.subprocess, "Popen", spawn)
    started = time.monotonic()
    done = supervise([sys.executable, "-c", "import time; time.sleep(30)"], provider=claude,
                     cwd=str(tmp_path), log=tmp_path / "a.log", out=_Null(), err=_Null(),
                     stop=stop, clock=lambda: FIXED)  # fmt: skip
    assert time.monotonic() - started < 10, "the CLI ran on after the stop"
    assert done.halted and stop.sent[0] == signal.SIGINT


def test_the_runner_records_a_stop_before_the_spawn_as_halted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGTERM noted before the CLI could be spawned: nothing runs, the attempt is reported
    halted (interrupted_start), and rewake run exits 128 + SIGTERM."""
    from rewake.runner.process import attempts
    from rewake.runner.process.supervise import StopSignals

    class _Early(StopSignals):
        def __enter__(self) -> StopSignals:
            super().__enter__()
            self._on_signal(signal.SIGTERM, None)  # came during records.save / `started`
            return self

    class _Recording(_Store):
        def record_attempt(self, *args: Any) -> dict[str, Any]:
            return {}

    monkeypatch.setenv("REWAKE_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(attempts, "StopSignals", _Early)
    ran = tmp_path / "ran"
    record = RunRecord(root_id="e1", run_id="r1", provider="claude", cwd=str(tmp_path),
                       args=["-p", "x"])  # fmt: skip
    store = _Recording()
    runner = Runner(store, record, claude, Options(clock=lambda: FIXED),  # type: ignore[arg-type]
                    out=_Null(), err=_Null())  # type: ignore[arg-type]  # fmt: skip
    argv = [sys.executable, "-c", f"open({str(ran)!r}, 'w').close()"]
    step = Step(argv, 1, started_when_proven=False, fresh_allowed=False)
    assert runner.run(step) == 128 + signal.SIGTERM
    assert not ran.exists()
    assert store.bodies[0]["halted"] is True
    assert store.bodies[0]["failure_kind"] == "interrupted_start"
