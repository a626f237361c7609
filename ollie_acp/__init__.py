"""ollie as an Agent Client Protocol agent (`ollie acp`), over the same engine as ollie_lsp."""
