"""The kernel template's speed-ups (autograder/grade/speedups/: tracebacks, cell input, output...)
must change nothing a notebook shows: the same notebook run in a warm kernel and in a stock
ipykernel (started cold, as `nbgrader autograde` starts it) gives the same outputs, tracebacks
and PNG bytes included."""

import os
import re
import sys
import types

import nbformat
import numpy as np
import pytest
import torch
from nbclient import NotebookClient

from autograder.grade.kernels.template_client import Zygote
from autograder.grade.worker.execute import execute_notebook

pytestmark = pytest.mark.nbgrader  # starts a cold kernel (import torch) like stock nbgrader

CELLS = [
    "import os\nimport torch\nimport matplotlib.pyplot as plt\ndraws = []",
    # Tracebacks through torch's module code (a hook and a forward that raise), twice each.
    "def bad_hook(module, args):\n    raise ValueError('from a hook')\n"
    "layer = torch.nn.Linear(2, 2)\nlayer.register_forward_pre_hook(bad_hook)\nlayer(torch.ones(2))",
    "layer(torch.ones(1, 2))",
    "class Broken(torch.nn.Module):\n    def forward(self, x):\n        return x @ torch.ones(3)\n"
    "Broken()(torch.ones(2))",
    "Broken()(torch.ones(4))",
    # Through torch.nn.functional, which the template has parsed for its tracebacks.
    "torch.nn.ReLU(inplace=True)(torch.ones(1, requires_grad=True))",
    # Figures: one per cell, and two in one cell, with titles, colour bars and tight bounding boxes.
    "fig, ax = plt.subplots(figsize=(3, 2))\nimage = ax.imshow(torch.arange(12.).reshape(3, 4))\n"
    "fig.colorbar(image)\nax.set_title('a map')\n"
    "connection = fig.canvas.mpl_connect('draw_event', lambda event: draws.append(1))",
    "for k in range(2):\n    plt.figure(figsize=(2, 2))\n    plt.plot([0, k, 1])\n    plt.title(f'line {k}')",
    # Streams: both at once, around a display, without a newline, from a thread, then nothing.
    "import sys, threading\nprint('out')\nprint('err', file=sys.stderr)\ndisplay('shown')\n"
    "print('again')\nsys.stdout.write('no newline')",
    "thread = threading.Thread(target=print, args=('from a thread',))\nthread.start()\n"
    "thread.join()",
    "pass",
    # An optimizer: its first steps imported torch._dynamo in a stock kernel, not in a warm one.
    "torch.manual_seed(0)\nnet = torch.nn.Linear(3, 2)\nopt = torch.optim.Adam(net.parameters())\n"
    "for _ in range(3):\n    opt.zero_grad()\n    net(torch.ones(4, 3)).pow(2).sum().backward()\n"
    "    opt.step()\nprint(net.weight.tolist(), opt.state_dict()['state'][0]['step'])",
    # IPython's input transforms (the kernel remembers the last cell's).
    "%precision 3\nimport math\nmath.pi",
    "digits = !echo 123\ndigits",
    "sys.stderr.write('last')\nsys.stderr.flush()\nprint('done', end='')",
    # Outputs queued for the IOPub thread in quick succession, and a cell that awaits.
    "for k in range(3):\n    print(k, flush=True)\n    display(k)\n    print(-k, file=sys.stderr)",
    "import asyncio\nawait asyncio.sleep(0)\nprint('awaited')",
    # The template imports with the garbage collector paused; its kernels collect as usual.
    "import gc\nprint(gc.isenabled(), gc.get_threshold())",
    # Not compared: how often the first figure was drawn, and whether the kernel's logger builds
    # debug records (it must still build the errors its handler shows).
    "print(len(draws))",
    "log = get_ipython().kernel.log\nprint(log.isEnabledFor(10), log.isEnabledFor(40))",
    "def opened(fd):\n    try:\n        return os.readlink(f'/proc/self/fd/{fd}')\n"
    "    except OSError:\n        return ''\n"
    "font_files_open = any(opened(fd).endswith('.ttf') for fd in os.listdir('/proc/self/fd'))\n"
    "flush = type(sys.stdout).flush\n"
    "transform = type(get_ipython().input_transformer_manager).transform_cell\n"
    "print(get_ipython().kernel._execute_sleep, getattr(flush, 'hooklab', False),\n"
    "      'transform_each_cell_once' in transform.__qualname__,\n"
    "      any(t.name == 'Shell channel' for t in threading.enumerate()),\n"
    "      'torch._dynamo.config' in sys.modules,\n"
    "      'wake_iopub_thread_once' in type(get_ipython().kernel.iopub_thread).schedule.__qualname__,\n"
    "      'may_await' in sys.modules['IPython.core.interactiveshell']._should_be_async.__qualname__,\n"
    "      getattr(sys.modules['matplotlib.image'].AxesImage.draw, 'hooklab', False),\n"
    "      font_files_open)",
]
UNCOMPARED = 3


def _notebook(sources: list[str] = CELLS) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


def _printed_by_warm_kernel(cell: str, folder) -> str:
    """What a one-cell notebook printed, run in a warm kernel."""
    ran = execute_notebook(nbformat.writes(_notebook([cell])), str(folder)).notebook
    return nbformat.reads(ran, 4).cells[0].outputs[0].text


def _shown(nb: nbformat.NotebookNode) -> list:
    """Each cell's outputs without their metadata, consecutive pieces of one stream joined: a
    kernel sends a print's parts in one message or in several depending on timing (a loaded
    machine), stock or warm, and nbclient stores the messages as they come."""
    shown = []
    for cell in nb.cells[:-UNCOMPARED]:
        outputs: list[dict] = []
        for output in cell.outputs:
            plain = {k: v for k, v in output.items() if k != "metadata"}
            last = outputs[-1] if outputs else {}
            if plain["output_type"] == "stream" and last.get("name") == plain["name"]:
                last["text"] += plain["text"]
            else:
                outputs.append(plain)
        shown.append(outputs)
    return shown


def test_warm_kernels_show_exactly_what_a_stock_kernel_shows(tmp_path, monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    # Another test module sets MPLBACKEND=Agg for the session; a stock kernel would inherit it
    # and show no figures (a sandboxed one gets a filtered environment).
    monkeypatch.delenv("MPLBACKEND", raising=False)
    stock = _notebook()
    resources = {"metadata": {"path": str(tmp_path)}}
    client = NotebookClient(stock, timeout=120, allow_errors=True, resources=resources)
    client.execute()
    Zygote.current().preload(["matplotlib.pyplot"])  # as a batch of plotting notebooks does
    warm = nbformat.reads(
        execute_notebook(nbformat.writes(_notebook()), str(tmp_path)).notebook, as_version=4
    )
    if Zygote.current().info["sandboxed"]:
        # A sandboxed kernel's home is its private /tmp, and IPython writes files under the home
        # as ~/...: with a checkout under /tmp, the torch paths in its tracebacks read ~/...
        warm = nbformat.reads(nbformat.writes(warm).replace("~/", "/tmp/"), as_version=4)
    assert _shown(warm) == _shown(stock)
    # Numbered as a stock kernel's execute_input numbers them, which warm kernels do not send.
    assert [cell.execution_count for cell in warm.cells] == list(range(1, len(CELLS) + 1))
    assert [cell.execution_count for cell in stock.cells] == list(range(1, len(CELLS) + 1))
    pngs = [o for cell in _shown(warm) for o in cell if "image/png" in o.get("data", {})]
    errors = [o for cell in _shown(warm) for o in cell if o["output_type"] == "error"]
    assert len(pngs) == 3 and len(errors) == 5
    # The speed-up is in use: the figure was drawn fewer times than in the stock kernel.
    count = {
        name: int(nb.cells[-3].outputs[0].text) for name, nb in (("warm", warm), ("stock", stock))
    }
    assert count["warm"] < count["stock"], count
    # Debug records are built by the stock kernel's logger only; errors by both.
    assert stock.cells[-2].outputs[0].text.split() == ["True", "True"]
    assert warm.cells[-2].outputs[0].text.split() == ["False", "True"]
    # Streams and transformed input came out the same (above), though warm kernels skip empty
    # flushes and the sleep before each reply, transform each cell once, and read shell
    # requests on the main thread instead of a thread of their own, wake their IOPub thread
    # once for what is queued, compile cells without "await" once, do not resample images to
    # lay a figure out, draw text with fonts read from memory (no font file open), and their
    # optimizer (same weights, above) did not import torch._dynamo.
    results = [o for cell in _shown(warm) for o in cell if o["output_type"] == "execute_result"]
    assert [o["data"]["text/plain"] for o in results][-2:] == ["3.142", "['123']"]
    streams = [o for cell in _shown(warm) for o in cell if o["output_type"] == "stream"]
    assert "".join(o["text"] for o in streams).count("from a thread") == 1
    stock_flags = "0.0005 False False True True False False False True"
    warm_flags = "0.0 True True False False True True True False"
    assert stock.cells[-1].outputs[0].text.split() == stock_flags.split()
    assert warm.cells[-1].outputs[0].text.split() == warm_flags.split()
    assert os.environ["NBGRADER_EXECUTION"] == "autograde"
    # Each cell records the same four times as under a stock kernel, in the order a kernel takes
    # them, though warm kernels send the first two in the reply (announcements.py).
    for warm_cell, stock_cell in zip(warm.cells, stock.cells, strict=True):
        times = warm_cell.metadata["execution"]
        assert times.keys() == stock_cell.metadata["execution"].keys() == set(TIMES)
        assert [times[key] for key in TIMES] == sorted(times.values())
        # ...written the way nbclient writes the times it takes itself
        assert {_shape(t) for t in times.values()} == {
            _shape(stock_cell.metadata["execution"][TIMES[-1]])
        }


TIMES = ("iopub.status.busy", "iopub.execute_input", "shell.execute_reply", "iopub.status.idle")


def _shape(time_text: str) -> str:
    return re.sub(r"\d", "0", time_text)


def test_warm_kernels_do_not_announce_the_cells_they_run(tmp_path, monkeypatch):
    # No "busy" status and no execute_input on IOPub per cell: each cell's IOPub messages are its
    # outputs, and nbclient gets its idle status from the grading worker (cell_ends.py).
    from autograder.grade import speedups
    from autograder.grade.worker.execute import CappedExecute

    speedups.install("worker")  # as in grading workers (execute.py)
    received = []
    process_message = CappedExecute.process_message

    def counted(self, msg, cell, cell_index):
        state = msg["content"].get("execution_state", "")
        if state:
            state += " (the worker's)" if msg["msg_id"].endswith("-idle") else " (the kernel's)"
        received.append((cell_index, msg["msg_type"], state))
        return process_message(self, msg, cell, cell_index)

    monkeypatch.setattr(CappedExecute, "process_message", counted)
    cells = ["print('one')", "1 + 1", "pass"]
    ran = nbformat.reads(
        execute_notebook(nbformat.writes(_notebook(cells)), str(tmp_path)).notebook, 4
    )
    assert received == [
        (0, "stream", ""),
        (0, "status", "idle (the worker's)"),
        (1, "execute_result", ""),
        (1, "status", "idle (the worker's)"),
        (2, "status", "idle (the worker's)"),
    ]
    assert all(cell.metadata["execution"].keys() == set(TIMES) for cell in ran.cells)


def test_a_warm_kernel_announces_every_request_but_a_cell(tmp_path):
    # kernel_info (which a client sends to learn the kernel is ready) still gets its busy status.
    import asyncio

    from warm_client import warm_client

    async def iopub_per_request() -> list[list[str]]:
        async with warm_client(tmp_path) as client:
            seen = []
            for request in (client.kernel_info, lambda: client.execute("pass")):
                msg_id, kinds = request(), []
                while kinds[-1:] != ["status:idle"]:
                    msg = await client.get_iopub_msg(timeout=30)
                    if msg["parent_header"].get("msg_id") == msg_id:
                        state = msg["content"].get("execution_state", "")
                        kinds.append(f"{msg['msg_type']}:{state}")
                seen.append(kinds)
            return seen

    kernel_info, cell = asyncio.run(iopub_per_request())
    assert kernel_info == ["status:busy", "status:idle"]
    assert cell == ["status:idle"]


def test_warm_kernels_list_the_same_module_files_a_stock_kernel_lists(tmp_path):
    # IPythonKernel lists the file of every module loaded when it is made (for its debugger);
    # a warm kernel reads a list the template made before the fork, which must be that same list.
    cell = (
        "import sys\nkernel = get_ipython().kernel\n"
        "loaded = [m.__file__ for m in list(sys.modules.values()) if getattr(m, '__file__', 0)]\n"
        "print(len(kernel._kernel_modules))\n"
        "print(sorted(set(kernel._kernel_modules) ^ set(loaded)))\n"
        "from autograder.grade.speedups.listed_modules import _listed\n"
        "listed = [m.__file__ for m in _listed.values() if hasattr(m, '__file__')]\n"
        "print(listed == kernel._kernel_modules)\n"
        # IPython's init_code keeps the names of the modules loaded at start (%reset's aggressive
        # mode unloads the others): the names, read from the template's list too.
        "shell = get_ipython()\n"
        "print({id(k) for k in shell._sys_modules_keys} == {id(k) for k in _listed},\n"
        "      len(shell._sys_modules_keys))"
    )
    printed = _printed_by_warm_kernel(cell, tmp_path)
    count, difference, from_template, names = printed.splitlines()
    assert int(count) > 1000  # torch's modules and the rest
    assert difference == "[]"  # the files of exactly the modules loaded in the kernel now
    assert from_template == "True"  # read from the template's list
    same_names, names_count = names.split()
    assert same_names == "True" and int(names_count) > int(count)


def test_the_listed_modules_stand_in_only_while_nothing_was_loaded_since(monkeypatch):
    # A module loaded after the listing (in the kernel, before it reads them) makes the kernel
    # read the real sys.modules; what it sets on `sys` goes to the real one.
    from autograder.grade.speedups import listed_modules as template_warmup

    monkeypatch.setattr(template_warmup, "_listed", {})
    monkeypatch.setattr(template_warmup, "_listed_from", -1)
    template_warmup.list_loaded_modules()
    stand_in = template_warmup._SysWithListedModules()
    assert stand_in.modules is template_warmup._listed
    assert list(stand_in.modules) == list(sys.modules)
    monkeypatch.setitem(sys.modules, "hooklab_loaded_later", types.ModuleType("later"))
    assert stand_in.modules is sys.modules
    monkeypatch.setattr(sys, "argv", ["before"])
    stand_in.argv = ["after"]
    assert sys.argv == ["after"] and stand_in.platform == sys.platform


def test_a_flush_waits_for_a_timed_flush_that_has_taken_the_output(monkeypatch):
    # The IOPub thread's timed flush takes the buffers, then builds and queues its message. A
    # flush at the end of a cell in that window must queue behind it, as the stock flush does,
    # or the cell's idle status could go out before its output (which nbclient would then drop).
    import threading

    import zmq
    from ipykernel.iostream import IOPubThread, OutStream
    from jupyter_client.session import Session

    from autograder.grade.speedups import kernel_output

    monkeypatch.setattr(OutStream, "flush", OutStream.flush)  # put back afterwards
    monkeypatch.setattr(OutStream, "_flush", OutStream._flush)
    kernel_output._skip_empty_flushes()
    context = zmq.Context()
    iopub = IOPubThread(context.socket(zmq.PUB))
    iopub.start()
    session = Session(key=b"")
    stream = OutStream(session, iopub, "stdout", watchfd=False)
    stream.flush_interval = 600  # no timer of its own during the test
    taken, go_on = threading.Event(), threading.Event()
    build_message = session.msg

    def msg(*args, **kwargs):  # the timed flush has taken the buffers
        taken.set()
        go_on.wait(10)
        return build_message(*args, **kwargs)

    session.msg = msg
    scheduled = []
    schedule = iopub.schedule
    iopub.schedule = lambda task: (scheduled.append(task), schedule(task))
    try:
        stream.write("output")
        timed = threading.Thread(target=stream._flush)
        timed.start()
        assert taken.wait(10)
        scheduled.clear()
        stream.flush()
        assert scheduled, "a flush returned while another was taking the output"
        go_on.set()
        timed.join(10)
        scheduled.clear()
        stream.flush()  # nothing written, nothing under way
        assert scheduled == []
    finally:
        go_on.set()
        iopub.stop()
        iopub.close()
        context.term()


TRICKY_INPUTS = [
    "%time x = 1",
    "a = %who_ls",
    "b = !echo hi",
    "!echo hi",
    "x = 1\nx?",
    "?x",
    "x??",
    "/print 1",
    ",print a b",
    ";print a b",
    "    /print 1",
    "if True:\n    %time 1",
    "y = 1 != 2",
    "s = '''\n/not a call\n'''",
    "print(f'{0.5:.0%}')",
    "x = 1 \\\n    / 2",
    "%%time\nx = 1",
    ">>> print(1)\n... ",
    "In [1]: print(1)",
    "  x = 1",
    "\n\nx = 1",
    "x = 'unterminated",
    "def f():\n    return 1\n",
    "x = [1,\n     2]",
]


def test_cells_skipped_by_the_tokenizer_transform_exactly_as_in_ipython():
    # The kernel skips IPython's token transforms for a cell with none of their marks: every
    # cell of the course and some that need them transform as stock IPython transforms them.
    import json
    import subprocess
    import sys

    from autograder import course

    cells = list(TRICKY_INPUTS)
    for path in sorted((course.ROOT / "solutions").glob("*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        cells += [cell.source for cell in nb.cells if cell.cell_type == "code"]
    program = (
        "import json, sys\n"
        "from IPython.core.inputtransformer2 import TransformerManager\n"
        "if sys.argv[1] == 'warm':\n"
        "    from autograder.grade.speedups import cell_input\n"
        "    cell_input.install()\n"
        "manager = TransformerManager()\n"
        "out = []\n"
        "for cell in json.load(sys.stdin):\n"
        "    try:\n"
        "        out.append(manager.transform_cell(cell))\n"
        "    except Exception as error:\n"
        "        out.append(f'{type(error).__name__}: {error}')\n"
        "print(json.dumps(out))\n"
    )
    results = {}
    for mode in ("stock", "warm"):
        done = subprocess.run(
            [sys.executable, "-c", program, mode],
            input=json.dumps(cells),
            capture_output=True,
            text=True,
            check=True,
        )
        results[mode] = json.loads(done.stdout)
    assert len(results["warm"]) == len(cells) > 100
    assert results["warm"] == results["stock"]
    # The tricky ones do change: the comparison covers the transforms, not only the skipping.
    changed = [a != b for a, b in zip(TRICKY_INPUTS, results["stock"], strict=False)]
    assert sum(changed) >= 10


def test_kernels_of_a_digits_notebook_inherit_the_parsed_digits(tmp_path):
    # The template that imports autograder.digits for a batch reads scikit-learn's digits once;
    # its kernels find them read before their first load, and load the same values.
    Zygote.current().preload(["autograder.digits"])
    cell = (
        "from autograder import digits\n"
        "print(digits.bundled_digits_rows.cache_info().currsize)\n"
        "images, labels = digits.load_digits_images()\n"
        "print(images.shape[0], float(images.sum()), int(labels.sum()))"
    )
    printed = _printed_by_warm_kernel(cell, tmp_path)
    inherited, loaded = printed.splitlines()
    assert inherited == "1"
    from autograder.digits import _sklearn_file

    rows = np.loadtxt(_sklearn_file("datasets/data/digits.csv.gz"), delimiter=",")
    count, total, label_sum = loaded.split()
    assert int(count) == len(rows) and int(label_sum) == int(rows[:, -1].sum())
    expected = torch.tensor(rows[:, :-1], dtype=torch.float32).div(16).sum().item()
    assert float(total) == pytest.approx(expected, rel=1e-6)


def test_kernels_inherit_the_parsed_source_of_torch_code_tracebacks_pass_through(tmp_path):
    # A traceback's formatter parses each file it passes through, once per process: torch's
    # module code and its 7000-line functional.py are parsed in the template, not in a kernel.
    cell = (
        "from stack_data.core import Source\n"
        "parsed = Source._class_local('__source_cache_with_lines', {})\n"
        "print(sorted(name.rsplit('/', 1)[-1] for name, _ in parsed if 'torch' in name))"
    )
    parsed = _printed_by_warm_kernel(cell, tmp_path)
    for name in ("module.py", "functional.py", "activation.py", "_tensor.py"):
        assert f"'{name}'" in parsed, parsed


def test_a_kernels_first_manual_seed_reads_no_source_file(tmp_path):
    # torch.manual_seed formats the stack (for CUDA's lazy start) and so reads the source of every
    # frame's file: the template has read those a kernel's cells run inside.
    cell = (
        "import linecache, torch\nbefore = set(linecache.cache)\ntorch.manual_seed(0)\n"
        "print([name for name in set(linecache.cache) - before if 'ipykernel_' not in name])"
    )
    printed = _printed_by_warm_kernel(cell, tmp_path)
    assert printed.strip() == "[]"


def test_kernels_and_the_grader_pack_messages_with_orjson(tmp_path):
    # jupyter_client uses orjson when it is installed (a declared dependency): in the kernel,
    # which sends every output, and in the grader, which reads them.
    from jupyter_client.session import Session

    cell = "print(get_ipython().kernel.session.packer, 'ünïcode', [0.1, 1e-300])"
    printed = _printed_by_warm_kernel(cell, tmp_path)
    assert printed == "orjson ünïcode [0.1, 1e-300]\n"
    assert Session().packer == Session().unpacker == "orjson"
