"""`OLLIE_LOG_LEVEL`: one reading of it for the daemon, `ollie acp` and the terminal (ollie.log.setup_logging)."""

from __future__ import annotations

import logging

from ollie.log import setup_logging


def test_the_level_comes_from_the_environment_a_bad_one_is_info_and_only_its_user_reads_the_file(tmp_path, monkeypatch):
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        for given, expected in (("debug", logging.DEBUG), ("nonsense", logging.INFO), ("", logging.INFO)):
            monkeypatch.setenv("OLLIE_LOG_LEVEL", given)
            setup_logging(tmp_path / "ollie.log")
            assert root.level == expected, given
        # Another user of the machine reads none of it (it was 0644).
        assert (tmp_path / "ollie.log").stat().st_mode & 0o777 == 0o600
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
                handler.close()
        root.setLevel(level)
