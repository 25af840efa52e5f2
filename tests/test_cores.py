"""limits.cores: the default worker and thread count — the CPU affinity, capped by a cgroup v2 CPU quota."""

from __future__ import annotations

import os

import pytest

from deplbench import limits
from deplbench.benchmarks.executors import default_workers
from deplbench.formulations.adaptive.settings import threads_for


def _affinity() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@pytest.mark.parametrize("content, cap", [
    ("50000 100000\n", 1),            # half a core: one
    ("150000 100000\n", 2),           # 1.5 cores: two (⌈quota/period⌉)
    ("100000000 100000\n", None),     # a quota above the affinity caps nothing
    ("max 100000\n", None),           # no quota
    ("garbage\n", None),              # malformed: ignored
    ("0 100000\n", None),             # a zero quota is no quota to divide by: ignored
])
def test_the_cores_are_the_affinity_capped_by_the_cgroup_quota(tmp_path, monkeypatch, content, cap):
    f = tmp_path / "cpu.max"
    f.write_text(content)
    monkeypatch.setattr(limits, "CPU_MAX", str(f))
    want = _affinity() if cap is None else min(_affinity(), cap)
    assert limits.cores() == want == default_workers() == threads_for(0)


def test_a_missing_quota_file_leaves_the_affinity(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "CPU_MAX", str(tmp_path / "absent"))
    assert limits.cores() == _affinity() >= 1
