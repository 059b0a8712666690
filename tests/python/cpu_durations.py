"""`--cpu-durations=N`: the CPU seconds each test phase took, beside pytest's wall-clock `--durations`.

In CI the suites share two cores side by side (.ci/run), so a phase's wall time says as much about its
neighbours as about itself; its CPU time is what cutting it would save. A phase is charged the user and
system CPU that this process and every process under it used while it ran: the Spark driver and its Python
workers, the dbt and cdc-* subprocesses, the servers and schedulers a fixture starts and the tasks they
start, including the part of a module fixture's processes (a broker, the session's driver) that ran beside
it. A thread reads the process tree every second and keeps each process's last reading: the CPU a process
collects from the children it waits for would miss the JVM of every PySpark driver (its Python never
waits for it) and the tasks of a scheduler stopped before it collected them. What a process used in its
last second, and a process that leaves the tree (a server that daemonizes), are not counted. Under xdist
each worker measures its own processes and the figures travel with the test reports (docs/decisions.md,
"CI: suites side by side").
"""

import functools
import threading
import time

import psutil
import pytest

PHASE_CPU = pytest.StashKey[dict[str, float]]()
READING_INTERVAL_SECONDS = 1.0


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-durations",
        type=int,
        default=None,
        metavar="N",
        help="show the N test phases that used the most CPU (0 for all), and the CPU of every phase together",
    )


class ProcessTreeCpu:
    """The last CPU reading (user + system seconds, its own, not its children's) of every process that has
    been under this one, keyed by pid and start time."""

    def __init__(self) -> None:
        self._seconds: dict[tuple[int, float], float] = {}
        self._lock = threading.Lock()
        threading.Thread(target=self._read_forever, name="cpu-durations", daemon=True).start()

    def read(self) -> dict[tuple[int, float], float]:
        self._read()
        with self._lock:
            return dict(self._seconds)

    def _read_forever(self) -> None:
        while True:
            self._read()
            time.sleep(READING_INTERVAL_SECONDS)

    def _read(self) -> None:
        root = psutil.Process()
        for process in [root, *root.children(recursive=True)]:
            try:
                with process.oneshot():
                    key, times = (process.pid, process.create_time()), process.cpu_times()
            except psutil.Error:
                continue
            with self._lock:
                # Two threads read at once: keep the later reading whichever writes last.
                self._seconds[key] = max(self._seconds.get(key, 0.0), times.user + times.system)


@functools.cache
def process_tree() -> ProcessTreeCpu:
    """Started by the first test phase, not on import: an xdist controller runs no tests."""
    return ProcessTreeCpu()


def _charged(item: pytest.Item, when: str):
    if item.config.getoption("--cpu-durations") is None:
        return (yield)
    before = process_tree().read()
    try:
        return (yield)
    finally:
        after = process_tree().read()
        item.stash.setdefault(PHASE_CPU, {})[when] = sum(
            seconds - before.get(key, 0.0) for key, seconds in after.items()
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    return (yield from _charged(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    return (yield from _charged(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item):
    return (yield from _charged(item, "teardown"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if (seconds := item.stash.get(PHASE_CPU, {}).get(call.when)) is not None:
        report.user_properties.append(("cpu_seconds", round(seconds, 2)))
    return report


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    shown = config.getoption("--cpu-durations")
    if shown is None:
        return
    phases = [
        (seconds, report.when, report.nodeid)
        for reports in terminalreporter.stats.values()
        for report in reports
        if isinstance(report, pytest.TestReport)
        for name, seconds in report.user_properties
        if name == "cpu_seconds"
    ]
    phases.sort(reverse=True)
    total = sum(seconds for seconds, _, _ in phases)
    terminalreporter.write_sep("=", f"most CPU{f' ({shown})' if shown else ''}: {total:.0f} s in all")
    for seconds, when, nodeid in phases[: shown or None]:
        terminalreporter.write_line(f"{seconds:.1f}s cpu {when:<8} {nodeid}")
