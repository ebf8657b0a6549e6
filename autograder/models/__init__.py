"""The checker's own copies of the notebooks' model classes.

Each factory defines the classes anew on every call, so nothing a student did to a class in their
notebook (or to an earlier fresh copy) can change what a check measures.
"""
