"""The short and long profiles every hypothesis test runs under (as tests/test_fuzz.py does).

The normal suite (and CI) runs the short profile: few examples, derandomized, so a run is quick and
the same every time. ``DOCKET_FUZZ_PROFILE=long`` (``scripts/test --long``) runs the long one: the
example count each test names for it, with fresh random examples each run.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

LONG = os.environ.get("DOCKET_FUZZ_PROFILE") == "long"


def profile(short: int, long: int, *, checks: tuple[HealthCheck, ...] = (HealthCheck.too_slow,)) -> settings:
    """Settings with ``short`` examples in the normal suite, ``long`` under DOCKET_FUZZ_PROFILE=long."""
    return settings(
        max_examples=long if LONG else short,
        deadline=None,
        derandomize=not LONG,
        suppress_health_check=list(checks),
    )
