"""The execute server: inline code, tool scripts and pipelines, sandboxed, for one session.

Its names are imported from their submodules: the arguments' shapes and the schemas load without the server and
its runner.
"""
