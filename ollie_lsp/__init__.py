"""ollie-lsp: the language-server-style daemon that wraps the ollie engine."""
