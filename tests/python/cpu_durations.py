"""`--cpu-durations=N`: the CPU seconds each test phase took, beside pytest's wall-clock `--durations`.

In CI the suites share two cores side by side (.ci/run), so a phase's wall time says as much about its
neighbours as about itself; its CPU time (this process and every process under it: the Spark driver, its
Python workers, dbt and cdc-* subprocesses, the servers a fixture starts) is what cutting it would save. A
phase is charged what its processes used while it ran, including the part of a module fixture's processes
(a broker, a session's driver) that ran beside it. Under xdist each worker measures its own processes and
the report travels with the test's (docs/decisions.md, "CI: suites side by side").
"""

import psutil
import pytest

PHASE_CPU = pytest.StashKey[dict[str, float]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-durations",
        type=int,
        default=None,
        metavar="N",
        help="show the N test phases that used the most CPU (0 for all), and the CPU of every phase together",
    )


def process_tree_cpu_seconds() -> float:
    """User and system CPU of this process and its descendants, the exited ones they waited for included."""
    root = psutil.Process()
    total = 0.0
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def _charged(item: pytest.Item, when: str):
    started = process_tree_cpu_seconds()
    try:
        return (yield)
    finally:
        item.stash.setdefault(PHASE_CPU, {})[when] = process_tree_cpu_seconds() - started


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
