"""The reference for start-up and memory: a bare pygls 2 language server with no features of its own.

Run: python bench/bare_server.py (speaks LSP over stdio, like `python -m ollie_lsp`).
"""

from __future__ import annotations

from pygls.lsp.server import LanguageServer


def main() -> None:
    """Serve over stdio until `exit`."""
    LanguageServer("bare-pygls", "0").start_io()


if __name__ == "__main__":
    main()
