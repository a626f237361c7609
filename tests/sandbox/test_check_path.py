"""check_path: relative paths against cwd, symlinks resolved first, clear refusals."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ollie.sandbox import PolicyError, check_path


def test_relative_paths_resolve_against_cwd(ws):
    policy = ws.default_policy()
    assert check_path(policy, "new/file.txt", write=True, cwd=ws.work) == ws.work / "new" / "file.txt"
    assert check_path(policy, str(ws.scratch / "x"), write=True, cwd=ws.work) == ws.scratch / "x"
    assert check_path(policy, "/etc/hostname", write=False, cwd=ws.work) == Path(os.path.realpath("/etc/hostname"))


def test_read_only_paths_refuse_writes(ws):
    policy = ws.default_policy()
    with pytest.raises(PolicyError, match="may write only under"):
        check_path(policy, "/etc/hostname", write=True, cwd=ws.work)


def test_outside_paths_are_refused_naming_path_and_policy(ws):
    policy = ws.default_policy()
    with pytest.raises(PolicyError) as info:
        check_path(policy, "../outside/secret", write=False, cwd=ws.work)
    message = str(info.value)
    assert "../outside/secret" in message and str(ws.outside / "secret") in message
    assert "'default'" in message and str(policy.source) in message


def test_symlink_out_of_cwd_is_refused(ws):
    (ws.work / "link").symlink_to(ws.outside)
    (ws.work / "file_link").symlink_to(ws.outside / "secret")
    policy = ws.default_policy()
    for target in ("link/secret", "link/new", "file_link"):
        for write in (False, True):
            with pytest.raises(PolicyError, match="resolves to"):
                check_path(policy, target, write=write, cwd=ws.work)


def test_symlink_into_cwd_is_allowed(ws):
    (ws.work / "real").write_text("x")
    (ws.scratch / "to_work").symlink_to(ws.work / "real")
    assert check_path(ws.default_policy(), ws.scratch / "to_work", write=True, cwd=ws.work) == ws.work / "real"


def test_prefix_lookalike_is_not_inside(ws):
    sibling = ws.root / (ws.work.name + "-evil")
    sibling.mkdir()
    with pytest.raises(PolicyError):
        check_path(ws.default_policy(), sibling / "f", write=True, cwd=ws.work)


def test_daemon_proc_self_is_never_approved(ws):
    policy = ws.default_policy()
    with pytest.raises(PolicyError):
        check_path(policy, "/proc/self/environ", write=False, cwd=ws.work)
    with pytest.raises(PolicyError):
        check_path(policy, f"/proc/{os.getpid()}/environ", write=False, cwd=ws.work)


SEGMENTS = st.sampled_from(["..", ".", "sub", "up_link", "out_link", "in_link", "new"])


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(SEGMENTS, min_size=1, max_size=6), write=st.booleans())
def test_check_path_never_approves_a_path_outside_the_policy(ws, parts, write):
    (ws.work / "sub").mkdir(exist_ok=True)
    for name, target in (("up_link", ws.work.parent), ("out_link", ws.outside), ("in_link", ws.work / "sub")):
        if not (ws.work / name).is_symlink():
            (ws.work / name).symlink_to(target)
    policy = ws.default_policy()
    path = "/".join(parts)
    real = Path(os.path.realpath(ws.work / path))
    if not real.is_relative_to(ws.root):
        return  # system paths: covered by the tests above
    if real.is_relative_to(ws.work) or real.is_relative_to(ws.scratch):
        assert check_path(policy, path, write=write, cwd=ws.work) == real
    else:
        with pytest.raises(PolicyError):
            check_path(policy, path, write=write, cwd=ws.work)


def test_extended_policy_grants_extra_existing_paths(ws):
    policy = ws.default_policy()
    plan_dir = ws.root / "plan"
    plan_dir.mkdir()
    wider = policy.extended(rw=[plan_dir, ws.root / "missing"])
    assert check_path(wider, plan_dir / "plan", write=True, cwd=ws.work) == plan_dir / "plan"
    assert ws.root / "missing" not in wider.rw
    with pytest.raises(PolicyError):
        check_path(policy, plan_dir / "plan", write=True, cwd=ws.work)
