"""pytest fixtures for the end-to-end tests: one `orchid serve` for the session, and a summary
section in pytest's output where tests report measured numbers (e.g. STS-B Spearman)."""
import pytest

from support import MODEL_NAME, OrchidServer

@pytest.fixture(scope="session")
def server():
    """One server for the whole session; its clean shutdown (exit code 0) is checked at the end."""
    s = OrchidServer()
    yield s
    rc = s.stop()
    assert rc == 0, f"orchid serve did not stop cleanly on SIGTERM (exit {rc}):\n{s.log_text()}"


@pytest.fixture(scope="session")
def model_name():
    return MODEL_NAME


class _Report(list):
    """A test's report lines. They travel with the test's result (user_properties), so that the
    lines of tests run in pytest-xdist workers reach the summary too."""

    def __init__(self, node):
        super().__init__()
        self._node = node

    def append(self, item):
        super().append(item)
        self._node.user_properties.append((_PROPERTY, tuple(item)))


_PROPERTY = "orchid_e2e_number"
_LINES = []  # (label, text), in the order the results arrived


@pytest.fixture
def report(request):
    """Append (label, text) pairs; they are printed in an "orchid e2e numbers" summary section."""
    return _Report(request.node)


def pytest_runtest_logreport(report):
    if report.when == "call":
        _LINES.extend(value for name, value in report.user_properties if name == _PROPERTY)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if _LINES:
        terminalreporter.section("orchid e2e numbers")
        for label, text in _LINES:
            terminalreporter.write_line(f"{label}: {text}")
