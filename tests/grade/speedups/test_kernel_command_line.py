"""A kernel command line parsed ahead in the kernel template (kernel_command_line.py) must give
each kernel exactly what traitlets' own parsing gives it."""

import pytest
from ipykernel.kernelapp import IPKernelApp
from traitlets.config.application import Application

from autograder.grade.speedups import kernel_command_line

SHAPES = [
    ["-f", "{file}"],
    ["-f", "{file}", "--HistoryManager.hist_file=:memory:", "--IPKernelApp.log_level=ERROR"],
    ["--Session.key=b''", "-f", "{file}", "--InteractiveShell.colors=nocolor"],
    ["-f", "{file}", "a-script.py"],  # an extra argument, not an option
]


@pytest.fixture
def parsed_ahead(monkeypatch):
    monkeypatch.setattr(kernel_command_line, "_parsed", {})
    monkeypatch.setattr(IPKernelApp, "parse_command_line", IPKernelApp.parse_command_line)
    kernel_command_line.install()
    return kernel_command_line._parsed


def _stock(argv):
    app = IPKernelApp()
    Application.parse_command_line(app, list(argv))
    return app


def _what_the_kernel_gets(app):
    return (app.cli_config, app.config, app.extra_args, app.argv, app.connection_file)


@pytest.mark.parametrize("shape", SHAPES, ids=range(len(SHAPES)))
def test_each_kernel_gets_what_traitlets_would_parse_with_its_own_file(parsed_ahead, shape):
    first, second = ([a.format(file=f) for a in shape] for f in ("/run/k1.json", "/run/k2.json"))
    kernel_command_line.parse_ahead(first)  # in the template, before the first kernel
    assert len(parsed_ahead) == 1
    for argv in (first, second, first):
        app = IPKernelApp()
        app.parse_command_line(list(argv))
        assert _what_the_kernel_gets(app) == _what_the_kernel_gets(_stock(argv))
        assert app.connection_file == argv[argv.index("-f") + 1]
    assert len(parsed_ahead) == 1  # one shape


@pytest.mark.parametrize(
    "argv",
    [["-f", "/run/k.json", "--help"], ["--version"], ["install"], ["-f"], ["-f", "-x"], []],
)
def test_what_is_not_a_plain_kernel_command_line_is_not_parsed_ahead(parsed_ahead, argv):
    kernel_command_line.parse_ahead(argv)
    assert parsed_ahead == {}


def test_a_bad_option_ends_the_kernel_as_traitlets_ends_it(parsed_ahead, capsys):
    argv = ["-f", "/run/k.json", "--IPKernelApp.log_level=NO_SUCH_LEVEL"]
    kernel_command_line.parse_ahead(argv)
    codes = []
    for parse in (lambda: IPKernelApp().parse_command_line(list(argv)), lambda: _stock(argv)):
        with pytest.raises(SystemExit) as ended:
            parse()
        codes.append(ended.value.code)
    assert codes == [1, 1]
    assert capsys.readouterr().err.count("NO_SUCH_LEVEL") == 2  # its message, both times


def test_the_engines_log_level_option_sets_the_kernels_logging_up_once(monkeypatch):
    # A kernel applies its command line more than once while it starts (parse_command_line,
    # then again after its config files); each change of log_level reconfigures logging.
    from traitlets.config import application

    from autograder.grade.worker.execute import KERNEL_LOG_LEVEL

    calls = []
    real = application.dictConfig
    monkeypatch.setattr(application, "dictConfig", lambda c: calls.append(c) or real(c))
    app = IPKernelApp()
    app.log  # noqa: B018 - sets logging up once, as every kernel does when it first logs
    for _ in range(3):
        Application.parse_command_line(app, ["-f", "/run/k1.json", KERNEL_LOG_LEVEL])
    assert app.log_level == 40  # logging.ERROR
    assert len(calls) == 2  # the default set-up, then the one change to ERROR
