"""The workspace engine: checkpoints (shadow git), change tracking per step, review (undo, rewind).

Its names are imported from their submodules: a turn that writes nothing loads the errors and none of the git,
inotify or sandbox machinery behind the checkpoints.
"""
