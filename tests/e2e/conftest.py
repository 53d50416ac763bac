"""pytest fixtures for the end-to-end tests: one `orchid serve` for the session, and a summary
section in pytest's output where tests report measured numbers (e.g. STS-B Spearman)."""
import pytest

from support import MODEL_NAME, OrchidServer

_REPORT = pytest.StashKey[list]()


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


@pytest.fixture
def report(request):
    """Append (label, text) pairs; they are printed in an "orchid e2e numbers" summary section."""
    return request.config.stash[_REPORT]


def pytest_configure(config):
    config.stash[_REPORT] = []


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    lines = config.stash.get(_REPORT, [])
    if lines:
        terminalreporter.section("orchid e2e numbers")
        for label, text in lines:
            terminalreporter.write_line(f"{label}: {text}")
