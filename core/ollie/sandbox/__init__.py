"""The Landlock sandbox: policies (sandbox.yaml), path checks, and sandboxed spawning.

Its names are imported from their submodules: naming a `Policy` type needs neither Landlock's rules nor the spawn
machinery, which the first tool call loads.
"""
