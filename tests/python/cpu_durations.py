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
"CI: suites side by side"). Under each phase it lists the kinds of process that used the most of its CPU
(a Python command and its first argument, a JVM's main class under the command that started it), to say
which part of a fixture a cut would have to reach.
"""

import collections
import functools
import os
import re
import threading
import time

import psutil
import pytest

PHASE_CPU = pytest.StashKey[dict[str, tuple[float, list[tuple[str, float]]]]]()
READING_INTERVAL_SECONDS = 1.0
KINDS_SHOWN = 3
# A JVM's main class among its arguments: dotted lower-case packages, then the class.
MAIN_CLASS = re.compile(r"^(?:[a-z_][\w]*\.)+([A-Z][\w$]*)$")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-durations",
        type=int,
        default=None,
        metavar="N",
        help="show the N test phases that used the most CPU (0 for all), and the CPU of every phase together",
    )


def command_kind(command: list[str], parent_kind: str | None) -> str:
    """What a process is, in a few words: `dbt build`, `airflow scheduler`, `dbt build > SparkSubmit`."""
    if not command:
        return "?"
    program = os.path.basename(command[0]).strip("[")
    if program == "java":
        main_class = next((m[1] for argument in command[1:] if (m := MAIN_CLASS.match(argument))), "java")
        return f"{parent_kind} > {main_class}" if parent_kind else main_class
    arguments = command[1:]
    if program.startswith("python"):
        if arguments[:1] == ["-m"] and len(arguments) > 1:
            program, arguments = arguments[1], arguments[2:]
        elif arguments and not arguments[0].startswith("-"):
            program, arguments = os.path.basename(arguments[0]), arguments[1:]
    subcommand = next((argument for argument in arguments[:2] if re.fullmatch(r"[a-z][\w-]*", argument)), "")
    return f"{program} {subcommand}".strip()


class ProcessTreeCpu:
    """The last CPU reading (user + system seconds, its own, not its children's) of every process that has
    been under this one, keyed by pid and start time, and what kind of process each is."""

    def __init__(self) -> None:
        self._seconds: dict[tuple[int, float], float] = {}
        self.kinds: dict[tuple[int, float], str] = {}
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
                    # Read again each time: a launcher script becomes the JVM it execs, under the same pid.
                    parent = process.parent()
                    parent_key = parent and (parent.pid, parent.create_time())
                    self.kinds[key] = command_kind(process.cmdline(), self.kinds.get(parent_key))
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
    tree = process_tree()
    before = tree.read()
    try:
        return (yield)
    finally:
        by_kind: collections.Counter[str] = collections.Counter()
        for key, seconds in tree.read().items():
            by_kind[tree.kinds.get(key, "?")] += seconds - before.get(key, 0.0)
        item.stash.setdefault(PHASE_CPU, {})[when] = (by_kind.total(), by_kind.most_common(KINDS_SHOWN))


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
    if (charged := item.stash.get(PHASE_CPU, {}).get(call.when)) is not None:
        seconds, kinds = charged
        report.user_properties.append(("cpu_seconds", round(seconds, 2)))
        report.user_properties.append(("cpu_kinds", [(kind, round(used, 1)) for kind, used in kinds]))
    return report


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    shown = config.getoption("--cpu-durations")
    if shown is None:
        return
    phases = []
    for reports in terminalreporter.stats.values():
        for report in reports:
            properties = dict(report.user_properties) if isinstance(report, pytest.TestReport) else {}
            if "cpu_seconds" in properties:
                phases.append((properties["cpu_seconds"], report.when, report.nodeid, properties["cpu_kinds"]))
    phases.sort(key=lambda phase: phase[0], reverse=True)
    total = sum(phase[0] for phase in phases)
    terminalreporter.write_sep("=", f"most CPU{f' ({shown})' if shown else ''}: {total:.0f} s in all")
    for seconds, when, nodeid, kinds in phases[: shown or None]:
        terminalreporter.write_line(f"{seconds:.1f}s cpu {when:<8} {nodeid}")
        if seconds >= 1:
            terminalreporter.write_line("    " + "; ".join(f"{kind} {used:.0f} s" for kind, used in kinds))
