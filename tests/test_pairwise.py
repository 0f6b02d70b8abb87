"""A pairwise judge's statistics (issue 46, first part: stats/pairwise.py): preference for the up-steered response
of a pair, per criterion asked, in both orders; the pairwise self-effect, leakage, flags and position bias."""

import sys
from pathlib import Path

import numpy as np
import pytest

from radar_local.stats.pairwise import DOWN_FIRST, TIE, UP_FIRST, A, B, PairVerdicts, pairwise

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))


def verdicts(rows: list[tuple[int, int, int, int, int, int]]) -> PairVerdicts:
    """rows of (task, source, variant, asked, order, choice) over criteria a and b."""
    t, c, v, d, o, x = (np.array(col) for col in zip(*rows))
    return PairVerdicts(("a", "b"), t, c, v, d, o, x)


def test_preferences_self_effects_leakage_and_position_on_a_hand_computed_table():
    """Two pairs steered on a and two on b (one task), each asked about a and b in both orders (16 verdicts):
    - on a, asked a: up every time: p_aa = 1, s_a = 1;
    - on a, asked b: variant 0 up, variant 1 down, in both orders: p_ab = 1/2, l_ab = 0;
    - on b, asked b: up, but for one tie, left out of p (never half a preference): p_bb = mean(2/2, 1/1) = 1;
    - on b, asked a: always the first slot, so up when up is shown first, down otherwise: p_ba = 1/2, l_ba = 0.
    The first slot is chosen in 10 of the 15 decisive verdicts; b's two questions about a flip between the orders,
    of the 7 questions whose two orders are both decisive."""
    up = {UP_FIRST: A, DOWN_FIRST: B}  # the choice that prefers the up response in each order
    down = {UP_FIRST: B, DOWN_FIRST: A}
    rows = []
    for variant in (0, 1):
        for order in (UP_FIRST, DOWN_FIRST):
            rows.append((0, 0, variant, 0, order, up[order]))  # on a, asked a: up
            rows.append((0, 0, variant, 1, order, up[order] if variant == 0 else down[order]))  # asked b: 2 of 4
            rows.append((0, 1, variant, 1, order, TIE if (variant, order) == (1, DOWN_FIRST) else up[order]))
            rows.append((0, 1, variant, 0, order, A))  # on b, asked a: always the first slot
    r = pairwise(verdicts(rows), resamples=0)
    a, b = r.criteria
    assert a.accuracy == 1.0 and a.self_effect == 1.0
    assert b.accuracy == 1.0
    leak = {(x.source, x.target): x.leakage for x in r.leakage}
    assert leak["a", "b"] == pytest.approx(0.0)  # 2 of 4: p = 1/2
    assert leak["b", "a"] == pytest.approx(0.0)
    assert r.position.first_slot == pytest.approx(10 / 15) and r.position.ties == pytest.approx(1 / 16)
    assert r.position.flip_rate == pytest.approx(2 / 7)
    assert r.position.ci is None and r.leakage[0].band is None  # no resamples, no interval


@pytest.fixture(scope="module")
def simulated():
    from pairwise_error import sample, truth

    rng = np.random.default_rng(7)
    return {
        name: (pairwise(sample(rng, 5, 5, 5, leak, bias), resamples=300, seed=1), truth(5, leak, bias))
        for name, leak, bias in (("null", 0.0, 0.0), ("planted", 0.6, 0.15))
    }


def test_a_planted_leakage_and_position_bias_are_confirmed_and_their_intervals_hold_the_truth(simulated):
    r, true = simulated["planted"]
    planted = next(x for x in r.leakage if (x.source, x.target) == ("c0", "c1"))
    assert planted.confirmed and planted.ci[0] <= true["leakage"][0, 1] <= planted.ci[1]
    assert r.position.confirmed and r.position.ci[0] <= true["bias"] <= r.position.ci[1]
    assert [(x.source, x.target) for x in r.leakage if x.confirmed] == [("c0", "c1")]
    assert all(c.gate == "passed" for c in r.criteria)


def test_a_judge_with_neither_confirms_nothing(simulated):
    r, _ = simulated["null"]
    assert not any(x.confirmed for x in r.leakage) and not r.position.confirmed
    assert not any(e == "confirmed" for p in r.pairs for e in p.evidence.values())
