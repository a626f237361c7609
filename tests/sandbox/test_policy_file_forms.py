"""sandbox.yaml as people write it: quoted ports work under real Landlock; a broken file names itself."""

from __future__ import annotations

import pytest

from ollie.errors import ConfigError
from ollie.sandbox.policy import load_policy
from ollie.sandbox.rules import landlock_abi

from .test_landlock_net import FS, probe


def test_ports_written_as_strings_are_ports(ws):
    policy = ws.policy(FS + 'network: {mode: open, unrestricted: false, connect_tcp: ["443", " 8080 "], '
                            'bind_tcp: ["3000"]}\n')
    assert policy.network.connect_tcp == (443, 8080) and policy.network.bind_tcp == (3000,)
    with pytest.raises(ConfigError, match="connect_tcp"):
        ws.policy(FS + 'network: {connect_tcp: ["https"]}\n')
    with pytest.raises(ConfigError, match="connect_tcp"):
        ws.policy(FS + 'network: {connect_tcp: ["70000"]}\n')


@pytest.mark.skipif(landlock_abi() < 4, reason="needs Landlock ABI >= 4 (TCP rules)")
async def test_a_quoted_port_is_enforced_like_a_number(ws, listeners):
    allowed, denied = listeners
    policy = ws.policy(FS + f'network: {{mode: open, unrestricted: false, connect_tcp: ["{allowed}"]}}\n')
    lines = await probe(ws, policy, f"connect:{allowed}", f"connect:{denied}")
    assert lines == [f"connect {allowed} ok", f"connect {denied} errno 13"]


def test_an_undecodable_policy_file_is_a_clear_error_naming_it(tmp_path, monkeypatch):
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("OLLIE_CONFIG_DIR", str(config))
    file = config / "sandbox.yaml"
    file.write_bytes(b"filesystem:\n  ro: ['/usr\xff\xfe']\n")
    with pytest.raises(ConfigError) as caught:
        load_policy("default", cwd=tmp_path)
    assert str(file) in str(caught.value) and "UTF-8" in str(caught.value)
    file.unlink()
    file.mkdir()  # unreadable as a file for everyone, root included (mode 000 would not stop root)
    with pytest.raises(ConfigError) as caught:
        load_policy("default", cwd=tmp_path)
    assert str(file) in str(caught.value) and "cannot read" in str(caught.value)
