"""pytest plugin for the GPU tests: a run in which every test skipped (no CUDA
device, no GPU backend) exits 77, which CTest's SKIP_RETURN_CODE shows as
skipped, so a CPU machine's run never reads as a GPU pass."""

SKIPPED_EXIT_STATUS = 77

_counts = {"passed": 0, "failed": 0, "skipped": 0}


def pytest_runtest_logreport(report):
    if report.skipped:
        _counts["skipped"] += 1
    elif report.failed:
        _counts["failed"] += 1
    elif report.passed and report.when == "call":
        _counts["passed"] += 1


def pytest_sessionfinish(session, exitstatus):
    if exitstatus == 0 and _counts["skipped"] > 0 and not _counts["passed"] \
            and not _counts["failed"]:
        session.exitstatus = SKIPPED_EXIT_STATUS
