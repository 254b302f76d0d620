"""Admission: the cache budget and the sequences a unified or split pool admits."""

from planner.engine.sizing.admission import (
    admit,
    split_capacity,
    split_required_bytes,
    unified_capacity,
    usable_bytes,
)


def test_usable_is_nominal_times_utilisation():
    assert usable_bytes(80_000_000_000, 0.9) == 72_000_000_000


def test_unified_pool_shares_one_budget():
    assert unified_capacity(1000, 100, 150) == 4
    assert unified_capacity(0, 100, 150) == 0
    assert unified_capacity(-5, 100, 150) == 0


def test_split_pool_follows_sglang_mamba_full_memory_ratio():
    """SGLang handle_max_mamba_cache solves state + kv = rest and state / kv = r:
    state pool = rest x r / (1 + r). With rest 1900 and r 0.9: state 900, KV 1000."""
    n, stranded = split_capacity(1900, 100, 100, 0.9)
    # state pool admits 9, KV pool 10: the state pool is the bottleneck and 100 KV bytes idle.
    assert n == 9
    assert stranded == 1000 - 9 * 100
    assert unified_capacity(1900, 100, 100) == 9


def test_split_strands_bytes_a_unified_pool_would_use():
    """Long contexts make KV the bottleneck: the state pool keeps idle bytes."""
    n, stranded = split_capacity(19_000, 100, 1_000, 0.9)
    kv_pool = 19_000 - int(19_000 * 0.9 / 1.9)
    assert n == kv_pool // 1_000 == 10
    assert stranded == int(19_000 * 0.9 / 1.9) - 10 * 100
    assert unified_capacity(19_000, 100, 1_000) == 17 > n


def test_no_state_means_one_pool():
    assert split_capacity(1000, 0, 100, 0.9) == (10, 0)
    assert split_required_bytes(0, 100, 0.9) == 100


def test_admit_fits_and_deficit():
    a = admit(80_000_000_000, 0.9, 60_000_000_000, 5_000_000_000, 0, 1_000_000_000)
    assert a.cache_bytes == 7_000_000_000
    assert a.max_sequences == 7
    assert a.fits and a.deficit_bytes == 0


def test_admit_negative_budget_reports_the_shortfall():
    """Weights and runtime alone exceed usable memory: deficit = shortfall + one sequence."""
    a = admit(80_000_000_000, 0.9, 75_000_000_000, 5_000_000_000, 0, 1_000)
    assert a.cache_bytes == -8_000_000_000
    assert not a.fits
    assert a.max_sequences == 0
    assert a.deficit_bytes == 8_000_001_000


def test_admit_split_pool_deficit_covers_both_pools():
    a = admit(1000, 1.0, 0, 0, 600, 600, pool="split", state_pool_ratio=1.0)
    # each pool gets 500 but a sequence needs 600 in each: 1200 needed, 200 missing
    assert not a.fits
    assert a.max_sequences_unified == 0
    assert a.deficit_bytes == 200
    assert a.to_dict()["pool"] == "split"
