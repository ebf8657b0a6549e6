"""A kernel's command line, parsed once in the kernel template instead of in every kernel.

Every kernel is started as `-f <its connection file> <the same options>`. traitlets parses that
by building an argparse parser from every configurable class's options: ~3 ms and ~500 page
faults per kernel. The template parses the command line of the first kernel of each shape
(the connection file stood in by a placeholder) before it forks it; each kernel of that shape
takes the parsed configuration with its own file put back, and applies it as traitlets would.
Anything else (help, a subcommand, a command line of another shape) is parsed as before.
"""

from __future__ import annotations

import logging
from copy import deepcopy
from typing import Any

from autograder.grade.speedups.base import need

# What stands for the connection file while the template parses. Not a file anyone has.
CONNECTION_FILE = "/hooklab/parsed-with-this-connection-file.json"
# traitlets prints and exits for these, or hands the rest to a subcommand.
_NOT_PARSED_AHEAD = {"-h", "--help", "--help-all", "--version", "-V", "--", "help", "install"}

_parsed: dict[tuple[str, ...], tuple[Any, list[str]]] = {}  # shape -> (config, extra args)


def kernel_argv(cmd: list[str]) -> list[str]:
    """The kernel's arguments in its launch command `python -m ipykernel_launcher -f ...`."""
    return cmd[cmd.index("-m") + 2 :] if "-m" in cmd else cmd[1:]


def _shape(argv: list[str]) -> tuple[str, ...] | None:
    """`argv` with its connection file replaced, or None if it is not a plain `-f FILE ...`."""
    if argv.count("-f") != 1 or _NOT_PARSED_AHEAD.intersection(argv):
        return None
    at = argv.index("-f") + 1
    if at >= len(argv) or argv[at].startswith("-"):
        return None
    return (*argv[:at], CONNECTION_FILE, *argv[at + 1 :])


def parse_ahead(argv: list[str]) -> None:
    """In the template, before forking a kernel started with `argv`: parse its shape, once."""
    from ipykernel.kernelapp import IPKernelApp
    from traitlets.config.loader import KVArgParseConfigLoader

    shape = _shape(argv)
    if shape is None or shape in _parsed:
        return
    # What traitlets' parse_command_line does for such a command line, short of applying it
    # (which would configure the application's logging here, in the template).
    app = IPKernelApp()
    flags, aliases = app.flatten_flags()
    classes = list(app._classes_with_config_traits())
    # app.log, which app._create_loader passes, would set up the kernel's logging here.
    log = logging.getLogger(__name__)
    loader = KVArgParseConfigLoader(
        list(shape), aliases, flags, classes=classes, log=log, subcommands=app.subcommands
    )
    try:
        config = loader.load_config()
    except (Exception, SystemExit):  # the kernel parses it itself, and fails the same way
        return
    _parsed[shape] = (config, list(loader.extra_args))


def _with_file(value: Any, file: str) -> Any:
    if isinstance(value, dict):
        for key in value:
            value[key] = _with_file(value[key], file)
        return value
    return file if isinstance(value, str) and value == CONNECTION_FILE else value


def install() -> None:
    """Make IPKernelApp.parse_command_line use what the template parsed ahead."""
    from ipykernel.kernelapp import IPKernelApp
    from traitlets.config import loader
    from traitlets.config.application import catch_config_error

    need(IPKernelApp, "parse_command_line", "flatten_flags", "_classes_with_config_traits")
    need(IPKernelApp, "update_config", "subcommands")
    need(loader, "KVArgParseConfigLoader")
    original = IPKernelApp.parse_command_line

    @catch_config_error  # as traitlets' own: a bad option ends the kernel with its message
    def parse_command_line(self, argv=None):
        shape = _shape(list(argv)) if argv is not None else None
        if shape not in _parsed:
            return original(self, argv)
        config, extra_args = _parsed[shape]
        file = argv[argv.index("-f") + 1]
        # The end of traitlets' Application.parse_command_line, with the parsed config.
        self.argv = [str(arg) for arg in argv]
        self.cli_config = _with_file(deepcopy(config), file)
        self.update_config(self.cli_config)
        self.extra_args = [file if arg == CONNECTION_FILE else arg for arg in extra_args]

    IPKernelApp.parse_command_line = parse_command_line
