"""summarize_jax_profile.py (tests/gpu/jax_probe/) on profiles recorded on an
H200: where the steady GPU time of a JAX step sits, and each HLO operation's
time per step against jax.profiler's."""

import json
import os
import subprocess
import sys

from conftest import CLI, PYTHON

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "..", "gpu", "jax_probe")
RECORDED = os.path.join(PROBE, "recorded")


def summarize(tmp_path, profile, *args):
    exported = tmp_path / "export.json"
    subprocess.run([CLI, "export", "--format", "json", os.path.join(RECORDED, profile),
                    "-o", str(exported)], check=True, stdout=subprocess.DEVNULL)
    result = subprocess.run([PYTHON, os.path.join(PROBE, "summarize_jax_profile.py"),
                             str(exported)] + list(args),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            check=True)
    return dict(field.split("=", 1) for line in result.stdout.splitlines()
                for field in line.split() if "=" in field), result.stdout


def test_per_operation_time_is_compared_per_step_over_the_timed_loop(tmp_path):
    fields, out = summarize(tmp_path, "dc_nocb_mlp.dctx",
                            os.path.join(RECORDED, "jp_nocb_mlp.json"))
    # Only the timed loop's kernels count: 20 steps, as jax.profiler's.
    assert "per_op (20 steps): ops matched=50 of ours=50, theirs=50" in out, out
    assert "per_op within 2%: ops 48/50 = 0.9600, time 0.9959" in out, out
    assert float(fields["steady_under_hlo_op"]) > 0.999
    assert float(fields["steady_under_command_buffer"]) == 0


def test_kernels_left_under_a_command_buffer_are_not_counted_as_placed(tmp_path):
    fields, out = summarize(tmp_path, "dc_attention_before_links.dctx")
    assert fields["steady_under_command_buffer"] == "0.2326", out
    assert fields["steady_under_hlo_op"] == "0.7672", out
    # Below a line of the jitted step (make_step.<locals>.step).
    assert fields["steady_under_jitted_line"] == "0.7629", out
    _, other = summarize(tmp_path, "dc_attention_before_links.dctx", "--jitted", "nothing")
    assert "steady_under_jitted_line=0.0000" in other, other


def test_a_second_jax_profiler_run_is_compared_with_the_first(tmp_path):
    # The spread between two jax.profiler processes is the floor for ours.
    reference = os.path.join(RECORDED, "jp_nocb_mlp.json")
    with open(reference) as f:
        again = json.load(f)
    again["per_op"]["jit_step/wrapped_tanh"][0] *= 1.05
    again["per_op"]["jit_step/wrapped_tanh.1"][0] *= 1.01
    again_path = tmp_path / "again.json"
    again_path.write_text(json.dumps(again))
    _, out = summarize(tmp_path, "dc_nocb_mlp.dctx", reference, "--again", str(again_path))
    assert "jax.profiler_again (20 steps): ops matched=50 of again=50, theirs=50" in out, out
    assert "jax.profiler_again within 2%: ops 49/50 = 0.9800" in out, out
    assert "diff 0.0500 wrapped_tanh " in out, out


def test_the_share_under_the_loops_line_shows_where_replayed_steps_went(tmp_path):
    # Without command buffers each of the 23 steps launches its kernels:
    # the 20 timed ones sit under the loop's line (timed -> step(...)).
    nocb, out = summarize(tmp_path, "dc_nocb_mlp.dctx")
    assert "steady_under_loop_line=0.8572 (timed)" in out, out
    # With command buffers, profiled before replays were moved to the
    # launching call: every timed step's replay sat under the warm-up call
    # that recorded the buffer, none under the loop.
    before, out = summarize(tmp_path, "dc_mlp_before_replays.dctx")
    assert "steady_under_loop_line=0.0000 (timed)" in out, out
    assert before["steady_under_jitted_line"] == "0.9849", out
    # Both calling lines are inside main() (the rest: copies on PJRT's
    # transfer threads).
    _, out = summarize(tmp_path, "dc_mlp_before_replays.dctx", "--loop", "main")
    assert "steady_under_loop_line=0.9999 (main)" in out, out
