"""Ratios of an in-process run taken round by round (gpu_overhead.py
--in-process), with their spread over the rounds.

On a shared machine a step's time drifts in phases of a few hundred
milliseconds: on one H100 instance the plain blocks of a single MLP process
had medians from 10.7 to 15.9 ms. Pooling every round's steps of a region
before dividing by the pooled plain steps lets a slow phase that fell on one
region's blocks read as that region's cost, and says nothing of how far the
result can be trusted. Each round runs its blocks back to back (plain, then
each region), so the ratio of a region's block to the plain block of its own
round cancels the phases longer than a round; the quartiles of those ratios
over the rounds say how much the rest still moves them.

The step log is gpu_models.py's --step-log: {block name: [[step ms, ...]
per round]}, with the plain steps under "plain".
"""

import statistics


def block_medians(blocks, statistic=statistics.median):
    """The median step of each block (or another `statistic` of its steps)."""
    return [statistic(block) for block in blocks]


def quartiles(values):
    """(first quartile, median, third quartile) of `values`, interpolated
    between the values themselves (statistics.quantiles' inclusive method),
    so that two rounds give their own range."""
    values = list(values)
    if not values:
        raise ValueError("no rounds")
    if len(values) == 1:
        return values[0], values[0], values[0]
    first, median, third = statistics.quantiles(values, n=4, method="inclusive")
    return first, median, third


def round_ratios(steps, name, statistic=statistics.median):
    """Per round, the median step of region `name` over that of the round's
    plain block. Under trace windows most steps are untraced, so their
    median is an untraced step's: pass statistics.mean there."""
    plain, region = steps["plain"], steps[name]
    if len(plain) != len(region):
        raise ValueError("the step log has %d plain blocks but %d of %s"
                         % (len(plain), len(region), name))
    return [ms / plain_ms for ms, plain_ms in
            zip(block_medians(region, statistic), block_medians(plain, statistic))]


def round_differences(steps, name, against):
    """Per round, region `name`'s ratio minus region `against`'s: what the
    first adds to the second, as a fraction of that round's plain step."""
    return [ours - theirs for ours, theirs in
            zip(round_ratios(steps, name), round_ratios(steps, against))]


def ratio_cell(values):
    """'1.246x (1.141-1.428)': the median of per-round ratios, then the
    first and third quartiles."""
    first, median, third = quartiles(values)
    return "%.3fx (%.3f-%.3f)" % (median, first, third)


def difference_cell(values):
    """'+0.152x (+0.050 to +0.301)': the median of per-round differences,
    then the first and third quartiles."""
    first, median, third = quartiles(values)
    return "%+.3fx (%+.3f to %+.3f)" % (median, first, third)


def extremes(values):
    """(lowest, median, highest) of `values` (one per process), as
    quartiles() gives the inner spread of one process's rounds."""
    values = list(values)
    if not values:
        raise ValueError("no processes")
    return min(values), statistics.median(values), max(values)


def spread_cell(values):
    """'1.309x (1.248-1.432)': the median of `values` (one per process),
    then the lowest and highest of them."""
    lowest, median, highest = extremes(values)
    return "%.3fx (%.3f-%.3f)" % (median, lowest, highest)


def difference_spread_cell(values):
    """'+0.008x (-0.116 to +0.068)': the median of `values` (one per
    process), then the lowest and highest of them."""
    lowest, median, highest = extremes(values)
    return "%+.3fx (%+.3f to %+.3f)" % (median, lowest, highest)
