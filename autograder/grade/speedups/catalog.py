"""Every speed-up: where it is installed (its roles), what it replaces, the versions of the
libraries whose internals it replaces that it was verified on, and the function that installs
it. docs/performance.md gives each one's measured gain."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SpeedUp:
    name: str
    replaces: str  # the internals it stands in for, in a few words
    verified: dict[str, str]  # distribution (or "python") -> the versions it was verified on
    # role (the process it is installed in, see speedups.ROLES) -> "module:function" here
    installs: dict[str, str]
    # Distributions without which it has nothing to do (it is then skipped without a word).
    only_with: tuple[str, ...] = field(default=())


# Verified on: the test suite and the named submissions' golden scores, with the speed-up on
# and off, at the floors of pyproject.toml (requirements.lock's oldest) and at requirements.lock.
SPEEDUPS: tuple[SpeedUp, ...] = (
    SpeedUp(
        "iri-checks-on-demand",
        "jsonschema's import of rfc3987_syntax, which builds a parser on import",
        {"jsonschema": ">=4.18,<4.27", "rfc3987-syntax": ">=1.1,<1.2"},
        {"command": "iri_check_on_demand:install"},
        only_with=("rfc3987-syntax",),
    ),
    SpeedUp(
        "gradebook-reuse",
        "nbgrader's Gradebook.__init__ and close: one engine per database URL",
        {"nbgrader": ">=0.9.5,<0.10"},
        {"command": "gradebook:install"},
    ),
    SpeedUp(
        "metadata-schemas",
        "the jsonschema module nbgrader validates cell metadata with",
        {"nbgrader": ">=0.9.5,<0.10", "jsonschema": ">=4.18,<4.27"},
        {
            "command": "schemas:install_metadata_validation",
            "worker": "schemas:install_metadata_validation",
        },
    ),
    SpeedUp(
        "output-schemas",
        "nbformat.v4.nbbase.validate, for each new output",
        {"nbformat": ">=5.9,<5.12", "fastjsonschema": ">=2.19,<2.23"},
        {"worker": "schemas:install_output_validation"},
    ),
    SpeedUp(
        "channel-reads",
        "jupyter_client's AsyncZMQSocketChannel.get_msg",
        {"jupyter-client": ">=8.8,<8.11", "pyzmq": ">=26,<28"},
        {"worker": "channels:install"},
    ),
    SpeedUp(
        "message-dates",
        "jupyter_client.session.extract_dates",
        {"jupyter-client": ">=8.8,<8.11"},
        {"worker": "dates:install", "template": "dates:install"},
    ),
    SpeedUp(
        "ready-at-kernel-info",
        "jupyter_client's KernelClient._async_wait_for_ready",
        {"jupyter-client": ">=8.8,<8.11"},
        {"worker": "kernel_ready:install"},
    ),
    SpeedUp(
        "unannounced-cells",
        "ipykernel's busy status and execute_input for each cell",
        {"ipykernel": ">=7.2,<7.5", "nbclient": ">=0.10,<0.12"},
        {"template": "announcements:install"},
    ),
    SpeedUp(
        "cell-ends-by-count",
        "the idle status that ends a cell (ipykernel's Session.send and _publish_status)",
        {"ipykernel": ">=7.2,<7.5", "jupyter-client": ">=8.8,<8.11"},
        {"worker": "cell_ends:install_in_worker", "template": "cell_ends:install_in_kernel"},
    ),
    SpeedUp(
        "tracebacks",
        "IPython's and stack_data's per-traceback highlighting, styles and module scans",
        {
            "ipython": ">=9.0,<9.19",
            "stack-data": ">=0.6,<0.7",
            "pygments": ">=2.17,<2.22",
            "python": ">=3.11,<3.14",
        },
        {"template": "tracebacks:install"},
    ),
    SpeedUp(
        "cell-input",
        "IPython's input transforms and async check, ipykernel's signature check, per cell",
        {"ipython": ">=9.0,<9.19", "ipykernel": ">=7.2,<7.5"},
        {"template": "cell_input:install"},
    ),
    SpeedUp(
        "kernel-output",
        "ipykernel's stream flushes and IOPub thread wake-ups",
        {"ipykernel": ">=7.2,<7.5", "pyzmq": ">=26,<28"},
        {"template": "kernel_output:install"},
    ),
    SpeedUp(
        "no-reply-sleep",
        "ipykernel's 0.5 ms sleep before every execute_reply",
        {"ipykernel": ">=7.2,<7.5"},
        {"template": "kernel_output:install_no_reply_sleep"},
    ),
    SpeedUp(
        "shell-on-main-thread",
        "ipykernel 7's shell-channel thread (subshells)",
        {"ipykernel": ">=7.2,<7.5"},
        {"template": "kernel_output:install_shell_on_main_thread"},
    ),
    SpeedUp(
        "kernel-command-line",
        "traitlets' parse of each kernel's command line",
        {"ipykernel": ">=7.2,<7.5", "traitlets": ">=5.14,<5.17"},
        {"template": "kernel_command_line:install"},
    ),
    SpeedUp(
        "listed-modules",
        "what ipykernel's IPythonKernel.__init__ and IPython's init_code read of sys.modules",
        {"ipykernel": ">=7.2,<7.5", "ipython": ">=9.0,<9.19"},
        {"template": "listed_modules:install"},
    ),
    SpeedUp(
        "quiet-kernel-log",
        "the debug records a kernel's logger builds for every message",
        {"ipykernel": ">=7.2,<7.5"},
        {"kernel": "kernel_output:install_quiet_log"},
    ),
    SpeedUp(
        "dynamo-on-demand",
        "torch._dynamo, imported by every eager optimizer",
        {"torch": ">=2.13,<2.14"},
        {"torch": "dynamo_on_demand:install"},
    ),
    SpeedUp(
        "kept-traceback-sources",
        "stack_data's cache of parsed sources, kept between runs",
        {"stack-data": ">=0.6,<0.7"},
        {"template": "traceback_cache:install"},
    ),
    SpeedUp(
        "fonts-in-memory",
        "matplotlib's font_manager._get_font, reading each font file once",
        {"matplotlib": ">=3.9,<3.12"},
        {"figures": "figures:install_fonts_in_memory"},
    ),
    SpeedUp(
        "figure-drawing",
        "matplotlib's draw after each cell and image resampling in layout passes",
        {"matplotlib": ">=3.9,<3.12", "matplotlib-inline": ">=0.1.7,<0.3"},
        {"figures": "figures:install_drawing"},
    ),
)

BY_NAME = {speedup.name: speedup for speedup in SPEEDUPS}
