"""The editor's knowledge (diagnostics, definitions, references, symbols, open files) as model-facing tools."""
