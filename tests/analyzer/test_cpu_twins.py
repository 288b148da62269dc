"""Each rule that can fire on a CPU profile, on its bad and fixed twin
programs: it fires on the bad one at the line to change and stays silent on
the fixed one."""

import pytest

from conftest import findings, profile_program

# rule id -> the line of <rule>_bad.py the finding must point at.
TWINS = {
    "unfused_elementwise": 7,
    "fwd_bwd_imbalance": 12,
    "slow_optimizer": 13,
    "zero_grad_fill": 12,
}


@pytest.mark.parametrize("rule", sorted(TWINS))
def test_rule_fires_on_bad_twin_and_not_on_fixed(rule, tmp_path):
    bad = profile_program(rule + "_bad.py", tmp_path / "bad.dctx")
    fixed = profile_program(rule + "_fixed.py", tmp_path / "fixed.dctx")
    fired = findings(bad, rule)
    assert len(fired) == 1, fired
    context = fired[0]["context"]
    assert context["file"].endswith("programs/%s_bad.py" % rule), context
    assert context["line"] == TWINS[rule], context
    assert fired[0]["benefit"]["high_seconds"] > 0
    assert fired[0]["suggestion"]
    assert findings(fixed, rule) == []
