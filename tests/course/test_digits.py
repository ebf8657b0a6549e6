"""The CNN notebook's data and weights: idx files read exactly, clear messages for bad ones, and a
committed checkpoint that the training module regenerates."""

import fnmatch
import gzip
import os
import struct
import tomllib

os.environ["MPLBACKEND"] = "Agg"  # the notebook plots; in-process runs must not need a display

import numpy as np
import pytest
import torch
from notebook_runner import ROOT, notebook_path, run_notebook

from autograder import notebooks
from autograder.digits import (
    DIGIT_CNN_WEIGHTS,
    MNIST_ENV,
    bundled_digits_rows,
    load_digits_images,
    read_idx,
)
from autograder.train_digit_cnn import serialise, train

A = "cnn_hooks"
TYPE_CODES = {np.uint8: 0x08, np.int16: 0x0B, np.float32: 0x0D}


def write_idx(path, array: np.ndarray) -> None:
    """The idx format, written here independently: 0, 0, type code, ndim, big-endian dims, data."""
    header = bytes([0, 0, TYPE_CODES[array.dtype.type], array.ndim])
    header += b"".join(struct.pack(">I", size) for size in array.shape)
    data = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as file:
        file.write(data)


def write_mnist(folder, images: np.ndarray, labels: np.ndarray, gz: str = "") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    write_idx(folder / f"train-images-idx3-ubyte{gz}", images)
    write_idx(folder / f"train-labels-idx1-ubyte{gz}", labels)


def random_mnist(count=5, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(count, 28, 28), dtype=np.uint8)
    return images, rng.integers(0, 10, size=count, dtype=np.uint8)


@pytest.mark.parametrize("gz", ["", ".gz"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_idx_files_round_trip_exactly(tmp_path, gz, dtype):
    rng = np.random.default_rng(1)
    array = (rng.standard_normal((3, 4, 5)) * 100).astype(dtype)
    write_idx(tmp_path / f"values.idx{gz}", array)
    got = read_idx(tmp_path / f"values.idx{gz}")
    assert got.dtype == array.dtype and got.shape == array.shape
    assert np.array_equal(got, array)


def averaged_by_hand(image: np.ndarray) -> np.ndarray:
    """Crop the 4-pixel margin, then average the (overlapping) windows adaptive pooling uses:
    rows floor(20 i / 8) to ceil(20 (i + 1) / 8), the same for columns."""
    inner = image[4:24, 4:24].astype(np.float64) / 255
    edges = [(20 * i // 8, -(-20 * (i + 1) // 8)) for i in range(8)]
    return np.array([[inner[r0:r1, c0:c1].mean() for c0, c1 in edges] for r0, r1 in edges])


@pytest.mark.parametrize("gz", ["", ".gz"])
def test_mnist_images_are_cropped_and_averaged_to_8x8(tmp_path, gz):
    images, labels = random_mnist()
    write_mnist(tmp_path, images, labels, gz)
    got_images, got_labels = load_digits_images(tmp_path)
    assert got_images.shape == (5, 1, 8, 8) and got_images.dtype == torch.float32
    assert got_labels.tolist() == labels.tolist() and got_labels.dtype == torch.int64
    for got, image in zip(got_images, images, strict=True):
        assert np.allclose(got[0].numpy(), averaged_by_hand(image), atol=1e-6)


def test_the_default_is_scikit_learns_digits_in_0_1():
    from sklearn.datasets import load_digits

    images, labels = load_digits_images()
    digits = load_digits()
    assert images.shape == (1797, 1, 8, 8) and images.dtype == torch.float32
    assert np.allclose(images[:, 0].numpy() * 16, digits.images)
    assert labels.tolist() == digits.target.tolist()


def test_each_load_gets_its_own_tensors_though_the_file_is_read_once():
    # The parsed file is kept (the kernel template reads it before forking kernels); what a
    # notebook changes in the tensors it got must not reach the next load.
    images, labels = load_digits_images()
    first_pixels, first_label = images.clone(), labels[0].item()
    images.add_(1.0)
    labels[0] = -1
    again_images, again_labels = load_digits_images()
    assert torch.equal(again_images, first_pixels) and again_labels[0].item() == first_label
    assert not bundled_digits_rows().flags.writeable  # the kept rows cannot be changed in place
    assert bundled_digits_rows.cache_info().currsize == 1


def one_line(error) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


def test_a_wrong_mnist_path_says_so(tmp_path):
    with pytest.raises(FileNotFoundError) as missing_folder:
        load_digits_images(tmp_path / "nowhere")
    assert "MNIST folder not found" in one_line(missing_folder)
    with pytest.raises(FileNotFoundError) as no_files:
        load_digits_images(tmp_path)
    assert "no train-images-idx3-ubyte" in one_line(no_files)


def test_malformed_idx_files_are_named(tmp_path):
    images, labels = random_mnist()
    write_mnist(tmp_path, images, labels)
    path = tmp_path / "train-images-idx3-ubyte"
    good = path.read_bytes()

    path.write_bytes(b"PK\x03\x04" + good[4:])  # e.g. a zip file renamed
    with pytest.raises(ValueError) as bad_magic:
        load_digits_images(tmp_path)
    assert "is not an idx file: it starts with 0x504b0304" in one_line(bad_magic)

    path.write_bytes(good[:-10])
    with pytest.raises(ValueError) as truncated:
        load_digits_images(tmp_path)
    assert "but its header says 5 x 28 x 28 values" in one_line(truncated)

    write_idx(path, images[:4])
    with pytest.raises(ValueError) as mismatch:
        load_digits_images(tmp_path)
    assert "4 images but 5 labels" in one_line(mismatch)

    path.unlink()
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(good)  # not gzipped after all
    with pytest.raises(ValueError) as not_gzip:
        load_digits_images(tmp_path)
    assert "is not a valid gzip file" in one_line(not_gzip)


def test_the_notebook_reads_mnist_from_the_environment(tmp_path, monkeypatch):
    images, labels = random_mnist(count=7)
    write_mnist(tmp_path, images, labels, ".gz")
    monkeypatch.setenv(MNIST_ENV, str(tmp_path))
    run = run_notebook(A, solutions=True, until="model_intro")
    assert run.errors == {}
    assert run["images"].shape == (7, 1, 16, 16)
    assert run["train_y"].tolist() == labels.tolist()


def test_a_wrong_mnist_folder_in_the_notebook_is_one_line_then_scikit_learn(tmp_path, monkeypatch):
    monkeypatch.setenv(MNIST_ENV, str(tmp_path / "nowhere"))
    run = run_notebook(A, solutions=True, until="model_intro")
    assert run.errors == {}
    problems = [line for line in run.stdout.splitlines() if "MNIST" in line]
    assert problems == [
        f"Could not read MNIST: MNIST folder not found: {tmp_path / 'nowhere'} (no such "
        "directory). Using scikit-learn's digits instead."
    ]
    assert run["images"].shape == (1797, 1, 16, 16)


# ---- the trained weights ----


def test_training_is_deterministic_and_the_committed_weights_match():
    first, second = train(), train()
    assert serialise(first) == serialise(second)  # same seed, same bytes
    committed = torch.load(DIGIT_CNN_WEIGHTS, weights_only=True)
    assert committed.keys() == first.keys()
    for name, tensor in first.items():
        # Bit-equal on the machine that wrote the file, but another CPU may round differently.
        # Measured: one Adam step fewer moves every tensor by more than 1e-3 (up to 1.2e-2).
        assert torch.allclose(committed[name], tensor, rtol=0, atol=1e-3), name


def test_the_weights_are_package_data():
    package_dir = ROOT / "autograder"
    assert DIGIT_CNN_WEIGHTS.is_relative_to(package_dir)
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["autograder"]
    relative = DIGIT_CNN_WEIGHTS.relative_to(package_dir).as_posix()
    assert any(fnmatch.fnmatch(relative, pattern) for pattern in patterns)


def test_the_notebook_uses_the_committed_weights():
    run = run_notebook(A, solutions=True, until="plot_helpers")
    assert run.errors == {}
    committed = torch.load(DIGIT_CNN_WEIGHTS, weights_only=True)
    state = run["model"].state_dict()
    assert all(torch.equal(state[name], committed[name]) for name in committed)


def test_the_notebooks_own_recipe_trains_the_same_weights():
    # The optional train-it-yourself cell, switched on, reproduces the file (up to rounding:
    # the notebook trains on every thread, the file was made on one).
    nb = notebooks.read(notebook_path("solutions", A))
    namespace = {"__name__": "__main__"}
    for cell in nb.cells:
        if cell.id == "plot_helpers":
            break
        if cell.cell_type == "code":
            source = cell.source
            if cell.id == "train_yourself":
                assert source.startswith("train_here = False\n")
                source = source.replace("train_here = False", "train_here = True", 1)
            exec(compile(source, cell.id, "exec"), namespace)
    committed = torch.load(DIGIT_CNN_WEIGHTS, weights_only=True)
    state = namespace["model"].state_dict()
    for name, tensor in committed.items():
        assert torch.allclose(state[name], tensor, rtol=0, atol=1e-3), name
