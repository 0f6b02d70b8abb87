from fractions import Fraction

import numpy as np
import pytest

from radar_local.stats.agreement import agreement
from radar_local.stats.baselines import score_profile_redundancy, synthetic_correlation, whitening_redundancy
from radar_local.stats.flags import pair_flags, upstream

# The paper's Table 1: (l_ij, l_ji) and the interpretation printed there.
TABLE_1 = [
    ("helpfulness", "correctness", 1.02, 0.82, "bidirectional cluster", None),
    ("correctness", "coherence", 0.22, 0.78, "directional", ("coherence", "correctness")),
    ("coherence", "fluency", 0.64, 0.51, "bidirectional cluster", None),
    ("coherence", "relevance", 0.28, 0.53, "directional", ("relevance", "coherence")),
    ("coherence", "readability", 0.62, 0.26, "directional", ("coherence", "readability")),
]


@pytest.mark.parametrize("a,b,l_ab,l_ba,expected,direction", TABLE_1)
def test_default_thresholds_reproduce_paper_table_1(a, b, l_ab, l_ba, expected, direction):
    assert pair_flags(Fraction(str(l_ab)), Fraction(str(l_ba)), True) == [expected]
    if direction:
        assert upstream(a, b, l_ab, l_ba) == direction


def test_tradeoff_and_gated_flags():
    assert pair_flags(Fraction(-3, 10), Fraction(-1, 4), True) == ["tradeoff"]
    assert pair_flags(Fraction(1, 10), Fraction(1, 20), True) == []
    assert pair_flags(Fraction(9, 10), Fraction(9, 10), False) == ["gated"]
    assert pair_flags(None, Fraction(9, 10), True) == ["gated"]


def test_a_pair_carries_every_flag_that_applies():
    # (0.75, -0.25): Asym 1.0 >= 0.25 and max 0.75 >= 0.5 -> directional; min -0.25 <= -0.2 -> tradeoff
    assert pair_flags(Fraction(3, 4), Fraction(-1, 4), True) == ["directional", "tradeoff"]


@pytest.mark.parametrize(
    "l_ab,l_ba,expected",
    [
        # Each threshold met exactly (>= / <=), then missed by the smallest step a rational can take here.
        ((1, 2), (1, 2), ["bidirectional cluster"]),  # Sym = 0.5 = cluster_sym, Asym 0
        ((49, 100), (1, 2), []),  # Sym 0.495 < 0.5
        ((1, 2), (1, 4), ["directional"]),  # Asym = 0.25, max = 0.5: both exactly at their thresholds
        ((1, 2), (26, 100), []),  # Asym 0.24 < 0.25; Sym 0.38 < 0.5
        ((49, 100), (24, 100), []),  # Asym 0.25 but max 0.49 < 0.5
        ((1, 10), (-1, 5), ["tradeoff"]),  # min = -0.2 = tradeoff_leak
        ((1, 10), (-19, 100), []),  # -0.19 > -0.2
    ],
)
def test_flag_thresholds_are_met_exactly(l_ab, l_ba, expected):
    assert pair_flags(Fraction(*l_ab), Fraction(*l_ba), True) == expected


def test_agreement_known_answer():
    # x = (0.1, 0.2, 0.3), y = (0.1, 0.2, 0.4): |diff| = (0, 0, 0.1) -> MAE = 0.1/3
    # same order -> Spearman 1; Pearson: centred x = (-.1, 0, .1), y = (-.1333, -.0333, .1667) (mean .2333)
    #   sum xy = .01333 + 0 + .01667 = .03; |x| = sqrt(.02) = .141421, |y| = sqrt(.046667) = .216025
    #   r = .03 / (.141421 * .216025) = .03 / .030551 = 0.98198
    r = agreement(np.array([0.1, 0.2, 0.3]), np.array([0.1, 0.2, 0.4]))
    assert r["mae"] == pytest.approx(0.1 / 3)
    assert r["spearman"] == pytest.approx(1.0)
    assert r["pearson"] == pytest.approx(0.98198, abs=1e-5)
    assert r["n_pairs"] == 3


def test_agreement_skips_undefined_pairs():
    r = agreement(np.array([0.1, np.nan, 0.3]), np.array([0.1, 0.5, 0.4]))
    assert r["n_pairs"] == 2 and np.isnan(r["pearson"]) and r["mae"] == pytest.approx(0.05)


def test_whitening_redundancy_recovers_partial_correlation(rng):
    # Equicorrelated (r = 0.5) trivariate normal: partial correlation = r / (1 + r) = 1/3 for every pair.
    cov = np.full((3, 3), 0.5) + 0.5 * np.eye(3)
    x = rng.multivariate_normal(np.zeros(3), cov, size=40_000)
    np.testing.assert_allclose(whitening_redundancy(x)[np.triu_indices(3, 1)], 1 / 3, atol=0.02)


def test_whitening_separates_direct_from_indirect_dependence(rng):
    # a -> b -> c chain: a and c correlate, but only through b, so their partial correlation is ~0.
    a = rng.normal(size=30_000)
    b = a + rng.normal(size=a.size)
    c = b + rng.normal(size=a.size)
    x = np.c_[a, b, c]
    assert synthetic_correlation(x)[0, 2] > 0.5
    assert whitening_redundancy(x)[0, 2] < 0.03


def test_score_profile_redundancy_is_rank_based():
    x = np.array([[0, 0], [1, 1], [2, 4], [3, 9], [4, 16]], float)  # monotone, non-linear
    assert score_profile_redundancy(x)[0, 1] == pytest.approx(1.0)
    assert synthetic_correlation(x)[0, 1] < 1.0


def test_constant_columns_give_undefined_not_zero():
    x = np.array([[1, 0], [1, 1], [1, 2], [1, 3]], float)
    assert np.isnan(synthetic_correlation(x)[0, 1])
    assert np.isnan(whitening_redundancy(x)[0, 1])


def _audit_with_unconditioned(rows: list[list[int]], reference: list[float]) -> dict:
    from radar_local.stats.audit import audit_cell
    from radar_local.stats.probes import probe_matrix
    from tests.conftest import probes, table

    crit = [f"c{j}" for j in range(len(rows[0]))]
    directed = [
        p
        for c in crit
        for d, s in (("+", 4), ("-", 0))
        for p in probes("t", c, d, [{x: (s if x == c else 2) for x in crit}] * 2)
    ]
    unconditioned = probes("t", "", "none", [dict(zip(crit, r)) for r in rows])
    pm = probe_matrix(table(directed + unconditioned), crit, "g", "v")
    pairs = [(a, b) for a in range(len(crit)) for b in range(a + 1, len(crit))]
    ref = {frozenset((crit[a], crit[b])): v for (a, b), v in zip(pairs, reference)}
    return audit_cell(pm, ref, resamples=0, budget=False).to_json()["baselines"]


@pytest.mark.parametrize("reference", [[0.0, 1.0, 4.0], [0.0, 2.0, 3.0]])
def test_equal_correlations_are_a_constant_vector_with_no_correlation(reference):
    """Unconditioned probes that are the permutations of (0, 2, 3): every pair's correlation is exactly
    -1/2, so the baseline is constant over the pairs and agrees with nothing (float noise said 1.0)."""
    import itertools

    base = _audit_with_unconditioned([list(p) for p in itertools.permutations((0, 2, 3))], reference)
    assert set(base["synthetic_correlation"].values()) == {-0.5}
    assert set(base["score_profile_redundancy"].values()) == {-0.5}
    for name in ("synthetic_correlation", "score_profile_redundancy"):
        a = base["agreement"][name]
        assert a["pearson"] is None and a["spearman"] is None and "constant" in a["reason"], (name, a)
        assert a["mae"] is not None


def test_tied_correlations_rank_as_ties():
    """Four probes whose pair correlations are exactly -1/3 (four pairs) and 5/9 (two): equal values
    are equal floats (scipy's differ in the last bits), so Spearman uses average ranks."""
    from scipy import stats

    rows = [[1, 0, 1, 3], [1, 2, 4, 3], [0, 2, 3, 3], [1, 2, 1, 0]]
    reference = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    base = _audit_with_unconditioned(rows, reference)
    synthetic = list(base["synthetic_correlation"].values())
    assert synthetic == [-1 / 3, -1 / 3, -1 / 3, 5 / 9, -1 / 3, 5 / 9]
    tied = [-1, -1, -1, 1, -1, 1]  # the same order with the ties exact
    expected = stats.spearmanr(tied, reference)[0]
    assert base["agreement"]["synthetic_correlation"]["spearman"] == pytest.approx(expected, abs=1e-12)
    assert expected == pytest.approx(9 / 210**0.5)  # average ranks 2.5 (x4), 5.5 (x2) against 1..6


def test_whitening_keeps_exchangeable_criteria_equal():
    """Probes closed under swapping c0 and c1: their partial correlations with c2 are exactly equal."""
    rows = [[0, 1, 2], [1, 0, 2], [2, 4, 1], [4, 2, 1], [3, 3, 0], [1, 3, 4], [3, 1, 4]]
    w = whitening_redundancy(np.array(rows, float))
    assert w[0, 2] == w[1, 2] and 0 < w[0, 2] < 1


def test_exact_correlations_match_scipy_away_from_ties():
    from scipy import stats

    from radar_local.stats.correlation import pearson, spearman

    rng = np.random.default_rng(1)
    for _ in range(20):
        x, y = rng.integers(0, 5, 12).astype(float), rng.uniform(0, 4, 12)
        if np.ptp(x) and np.ptp(y):
            assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
            assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)
    assert pearson(np.array([1.0, 1, 1]), np.array([0.0, 1, 2])) is None


def test_average_ranks_are_scipys_rankdata():
    from scipy import stats

    from radar_local.stats.correlation import average_ranks

    rng = np.random.default_rng(2)
    for size in (1, 2, 7, 30):
        x = rng.integers(0, 4, size).astype(float)  # many ties
        assert np.array_equal(average_ranks(x), stats.rankdata(x))
        table = rng.integers(0, 3, (size, 4)).astype(float)
        assert np.array_equal(average_ranks(table), stats.rankdata(table, axis=0))
    assert average_ranks(np.empty((0, 3))).shape == (0, 3)
