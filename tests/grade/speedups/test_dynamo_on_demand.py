"""torch._dynamo imported on demand (autograder/grade/speedups/dynamo_on_demand.py): eager optimizers
train exactly as with the real module, without importing it; anything that uses it gets the
real one. Each case runs in a fresh interpreter, since this one may have imported it already."""

import json
import subprocess
import sys

TRAIN = """
import json, sys, torch
if STAND_IN:
    from autograder.grade.speedups import dynamo_on_demand
    dynamo_on_demand.install()

def train(make, steps=4):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    optimizer = make(model.parameters())
    x = torch.randn(16, 4)
    for _ in range(steps):
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()
    optimizer.load_state_dict(optimizer.state_dict())
    optimizer.step()  # with the reloaded state
    return [p.detach().numpy().tobytes().hex() for p in model.parameters()]

optimizers = {
    "SGD": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
    "Adam": lambda p: torch.optim.Adam(p, lr=0.01),
    "AdamW": lambda p: torch.optim.AdamW(p, lr=0.01, amsgrad=True),
}
result = {name: train(make) for name, make in optimizers.items()}
result["dynamo loaded"] = "torch._dynamo.config" in sys.modules
"""


def _run(code: str, stand_in: bool) -> dict:
    script = TRAIN.replace("STAND_IN", repr(stand_in)) + code + "\nprint(json.dumps(result))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_eager_optimizers_train_the_same_without_importing_dynamo():
    stock, ours = _run("", stand_in=False), _run("", stand_in=True)
    assert stock.pop("dynamo loaded") is True  # what the stand-in saves
    assert ours.pop("dynamo loaded") is False
    assert ours == stock  # bit for bit, every parameter of every optimizer


USE_IT = """
import inspect
inspect.getmodule(compile("", "<scan>", "exec"))  # reads every module's __file__
result["loaded by a module scan"] = "torch._dynamo.config" in sys.modules
HOW
real = sys.modules["torch._dynamo"]
result["real module in place"] = (
    type(real).__name__ == "module" and torch._dynamo is real and "graph_break" in vars(real)
)
result["config loaded once"] = sys.modules["torch._dynamo.config"] is real.config
result["config spec"] = real.config.__spec__.origin.endswith("config.py")
# What the stand-in handed torch for zero_grad is now the real disabled function.
zero_grad = torch.optim.Optimizer.zero_grad.__wrapped__
result["zero_grad disabled"] = getattr(zero_grad.__dynamo_disable, "_torchdynamo_disable", False)
compiled = torch.compile(lambda x: x * 2 + 1, backend="eager")
result["compiled"] = compiled(torch.ones(3)).tolist()
result["after"] = train(optimizers["Adam"])
"""


def test_the_first_real_use_puts_the_real_module_in_place():
    ways = {
        "submodule import": "import torch._dynamo.config",
        "from import": "from torch._dynamo import config",
        "attribute": "torch._dynamo.reset()",
        "compile": "torch.compile(lambda x: x - 1, backend='eager')(torch.zeros(1))",
    }
    stock_adam = _run("", stand_in=False)["Adam"]
    for way, how in ways.items():
        result = _run(USE_IT.replace("HOW", how), stand_in=True)
        assert result["loaded by a module scan"] is False, way
        assert result["real module in place"] is True, way
        assert result["config loaded once"] is True, way
        assert result["config spec"] is True, way
        assert result["zero_grad disabled"] is True, way
        assert result["compiled"] == [3.0, 3.0, 3.0], way
        assert result["after"] == stock_adam, way


def test_install_leaves_an_imported_dynamo_alone_and_says_so():
    code = (
        "import sys, torch._dynamo\nfrom autograder.grade.speedups import dynamo_on_demand\n"
        "from autograder.grade.speedups.base import Missing\n"
        "try:\n    dynamo_on_demand.install()\nexcept Missing as missing:\n    print(missing)\n"
        "print(type(sys.modules['torch._dynamo']).__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    said, kind = done.stdout.splitlines()
    assert "torch._dynamo is imported already" in said and kind == "module"
