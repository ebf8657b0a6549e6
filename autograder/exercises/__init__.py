"""The course's exercises: one package per notebook, one module per grade id.

`<notebook>/<grade id>.py` is everything about one exercise — its
visible and hidden checks, the judges of their evidence, its hints — and the shared kit is
in `kit/`. Which exercises exist is read from the file names (kit/registry.py); nothing keeps a
list of them by hand.
"""
