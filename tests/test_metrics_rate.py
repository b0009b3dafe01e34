"""``metrics()`` rates cover a fixed window (issue 21): a health probe that calls ``metrics()``
often must not change what a Prometheus scraper sees."""

from __future__ import annotations

from aiokafkawire import metrics


def test_rate_is_over_a_fixed_window_whoever_calls(monkeypatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(metrics.time, "monotonic", lambda: clock[0])
    rate = metrics.Rate(window=30.0)
    total = 0
    for _second in range(60):  # 100 events a second for a minute, a probe calling every second
        clock[0] += 1.0
        total += 100
        assert rate.per_second(total) == 100.0
    # A burst, then a probe right after it and the scraper 0.1 s later: both see the window.
    total += 3000
    clock[0] += 0.1
    probe = rate.per_second(total)
    clock[0] += 0.1
    scraper = rate.per_second(total)
    assert 195 < probe < 205 and 195 < scraper < 205  # (30 s * 100 + 3000) / ~30 s
    # No events for a window (the probe still calling every second): the rate falls to zero.
    for _second in range(32):
        clock[0] += 1.0
        last = rate.per_second(total)
    assert last == 0.0


def test_rate_before_a_window_has_passed_is_since_creation(monkeypatch) -> None:
    clock = [50.0]
    monkeypatch.setattr(metrics.time, "monotonic", lambda: clock[0])
    rate = metrics.Rate(window=30.0)
    clock[0] += 2.0
    assert rate.per_second(100) == 50.0
    clock[0] += 0.01  # a second caller at once: the same figure, not 0 or a spike
    assert rate.per_second(100) == round(100 / 2.01, 3)


def test_samples_stay_bounded(monkeypatch) -> None:
    clock = [0.0]
    monkeypatch.setattr(metrics.time, "monotonic", lambda: clock[0])
    rate = metrics.Rate(window=30.0)
    for i in range(10_000):  # a probe hammering metrics() every 10 ms
        clock[0] += 0.01
        rate.per_second(i)
    assert len(rate._samples) <= 32
