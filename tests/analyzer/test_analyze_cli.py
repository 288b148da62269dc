"""`deepcontext analyze` options and errors, and the findings under
`deepcontext report`'s header."""

import json
import subprocess

import pytest

from conftest import CLI, analyze, profile_program


@pytest.fixture(scope="module")
def embedding_profile(tmp_path_factory):
    return profile_program("fwd_bwd_imbalance_bad.py",
                           tmp_path_factory.mktemp("cli") / "embedding.dctx")


def test_text_output_names_line_evidence_benefit_and_fix(embedding_profile):
    text = analyze(embedding_profile).stdout.decode()
    assert "1. [high] fwd_bwd_imbalance: backward costs" in text
    assert "at:         fwd_bwd_imbalance_bad.py:12 (main) -> EmbeddingBackward0 [backward]" in text
    assert "(threshold > 3.0x)" in text
    assert "benefit:" in text and "of profiled wall time" in text
    assert "sparse=True" in text
    assert "gpu_idle: no GPU activity in the profile" in text


def test_rule_filter_top_and_json(embedding_profile):
    document = json.loads(analyze("--format", "json", "--rule", "slow_optimizer",
                                  embedding_profile).stdout)
    assert document["rules_run"] == ["slow_optimizer"]
    assert document["findings"] == []
    top = json.loads(analyze("--format", "json", "--top", "1", embedding_profile).stdout)
    assert len(top["findings"]) == 1


def test_list_rules_and_errors(embedding_profile, tmp_path):
    listing = subprocess.run([CLI, "analyze", "--list-rules"], stdout=subprocess.PIPE,
                             check=True).stdout.decode().splitlines()
    assert len(listing) == 13 and listing[0].startswith("gpu_idle ")
    unknown = analyze("--rule", "no_such_rule", embedding_profile, check=2)
    assert b"unknown rule 'no_such_rule'" in unknown.stderr
    missing = analyze(tmp_path / "missing.dctx", check=1)
    assert b"missing.dctx" in missing.stderr and missing.stdout == b""


def test_report_shows_the_top_findings_under_its_header(embedding_profile):
    report = subprocess.run([CLI, "report", embedding_profile], stdout=subprocess.PIPE,
                            check=True).stdout.decode()
    header, _, body = report.partition("Metric:")
    assert "Findings:  (deepcontext analyze for details)" in header
    assert "1. [high] fwd_bwd_imbalance at fwd_bwd_imbalance_bad.py:12" in header
    assert "Top-down view" in body
