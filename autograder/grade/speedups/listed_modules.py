"""What a forked kernel reads of sys.modules while it is made, listed once in the kernel template.

IPythonKernel.__init__ lists every loaded module's file (for its debugger), IPython's init_code
every loaded module's name (for `%reset --aggressive`). In a forked kernel that touches ~3000
module objects, their names and file names, copying the memory page each sits on (some 2900
page faults, 5-8 ms per kernel for each of the two reads). The template lists them before each
fork, in fresh objects that sit together on a few pages (list_loaded_modules), and the kernel
reads that list instead while it is made, with the same names.
"""

from __future__ import annotations

import os
import sys

from autograder.grade.speedups.base import need


class _ModuleFile:
    """A loaded module's file, as IPythonKernel lists them: all it reads of a module."""

    __slots__ = ("__file__",)

    def __init__(self, file: str) -> None:
        self.__file__ = file


class _SysWithListedModules:
    """What ipykernel.ipkernel and IPython's shellapp call `sys` while a kernel is made: the
    real sys, except that `modules`, while no module has been loaded since the fork, is the
    template's list (list_loaded_modules), which reads the same."""

    @property
    def modules(self) -> dict:
        return _listed if len(sys.modules) == _listed_from else sys.modules

    def __getattr__(self, name: str):
        return getattr(sys, name)

    def __setattr__(self, name: str, value) -> None:  # `sys.argv = ...` sets the real one
        setattr(sys, name, value)


_listed: dict[str, object] = {}  # a copy of each loaded module's name -> its _ModuleFile
_listed_from = -1  # len(sys.modules) when _listed was made
_NO_FILE = object()  # stands for a module without a file (a built-in one)


def _copy(text):
    # fsdecode(fsencode()) copies a name exactly, so the copies sit together.
    return os.fsdecode(os.fsencode(text)) if isinstance(text, str) else text


def list_loaded_modules() -> None:
    """In the template, before a fork: the names and files of the loaded modules, which a
    kernel reads twice while it is made: IPythonKernel.__init__ lists every module's file (for
    its debugger), IPython's init_code every name (for `%reset --aggressive`).

    In a forked kernel that touches ~3000 module objects, their names and file names, copying
    the memory page each sits on (some 2900 page faults, 5-8 ms per kernel for each of the two
    reads). Listed here once, in fresh objects that sit together on a few pages, the kernel
    reads those instead and gets the same names. Listed again only when the template has
    imported modules since.
    """
    global _listed_from
    if len(sys.modules) == _listed_from:
        return
    listed = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        listed[_copy(name)] = _ModuleFile(_copy(file)) if file else _NO_FILE
    _listed.clear()
    _listed.update(listed)
    _listed_from = len(sys.modules)


def use_listed_modules() -> None:
    """Make IPythonKernel.__init__ and IPython's init_code read the template's list
    (list_loaded_modules)."""
    from ipykernel import ipkernel
    from IPython.core import shellapp

    def reading_the_list(module, function):
        def read(*args, **kwargs):
            module.sys = _SysWithListedModules()
            try:
                return function(*args, **kwargs)
            finally:
                module.sys = sys

        return read

    ipkernel.IPythonKernel.__init__ = reading_the_list(ipkernel, ipkernel.IPythonKernel.__init__)
    app = shellapp.InteractiveShellApp
    app.init_code = reading_the_list(shellapp, app.init_code)


def install() -> None:
    from ipykernel import ipkernel
    from IPython.core import shellapp

    need(ipkernel, "sys")
    need(ipkernel.IPythonKernel, "__init__")
    need(shellapp, "sys")
    need(shellapp.InteractiveShellApp, "init_code")
    use_listed_modules()
