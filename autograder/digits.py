"""The CNN notebook's data: handwritten digits as 8 x 8 image tensors, offline; its weights file.

By default the images are scikit-learn's bundled digits (1,797 of them, nothing downloaded). Given
a folder with the MNIST idx files (`train-images-idx3-ubyte`, `train-labels-idx1-ubyte`, gzipped
or not), they are read from there instead and shrunk to the same 8 x 8 format, so the notebook's
model and its trained weights work on both.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import struct
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

# The trained DigitCNN's state_dict; `python -m autograder.train_digit_cnn` regenerates it.
DIGIT_CNN_WEIGHTS = Path(__file__).resolve().parent / "data" / "digit_cnn.pt"
MNIST_ENV = "HOOKLAB_MNIST_DIR"  # the notebook reads the MNIST folder from this variable

# idx type codes (the third byte of the magic number) -> big-endian numpy dtypes
IDX_DTYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
MNIST_CROP = 4  # MNIST centres each digit in a 20 x 20 box inside its 28 x 28 frame


def load_digits_images(mnist_dir: str | Path | None = None, kind: str = "train"):
    """(images, labels): float images in [0, 1] shaped (N, 1, 8, 8), and int64 labels (N,).

    Without `mnist_dir`: scikit-learn's digits. With it: the MNIST `kind` set ("train" or
    "t10k") from that folder, each 28 x 28 image cropped to its central 20 x 20 box (where MNIST
    puts the digit; scikit-learn's digits fill their frame) and averaged down to 8 x 8.
    Raises FileNotFoundError or ValueError with a one-line explanation when the files are
    missing or are not MNIST idx files.
    """
    if mnist_dir is None:
        return _sklearn_digits()
    folder = Path(mnist_dir).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"MNIST folder not found: {folder} (no such directory)")
    raw_images = read_idx(_find(folder, f"{kind}-images", "idx3-ubyte"))
    raw_labels = read_idx(_find(folder, f"{kind}-labels", "idx1-ubyte"))
    if raw_images.ndim != 3 or raw_labels.ndim != 1:
        raise ValueError(
            f"MNIST files in {folder} have the wrong shapes: images {raw_images.shape} (expected "
            f"(N, rows, columns)), labels {raw_labels.shape} (expected (N,))"
        )
    if len(raw_images) != len(raw_labels):
        raise ValueError(
            f"MNIST files in {folder} do not match: {len(raw_images)} images but "
            f"{len(raw_labels)} labels"
        )
    images = torch.from_numpy(raw_images.astype(np.float32) / 255).unsqueeze(1)
    return shrink_mnist(images), torch.from_numpy(raw_labels.astype(np.int64))


def shrink_mnist(images: torch.Tensor) -> torch.Tensor:
    """(N, 1, 28, 28) -> (N, 1, 8, 8): crop the empty margin, then average 2.5 x 2.5 blocks."""
    if images.shape[-2:] == (28, 28):
        images = images[..., MNIST_CROP:-MNIST_CROP, MNIST_CROP:-MNIST_CROP]
    return F.adaptive_avg_pool2d(images, 8)


def _sklearn_digits():
    rows = bundled_digits_rows()
    images = torch.tensor(rows[:, :-1], dtype=torch.float32).reshape(-1, 1, 8, 8) / 16  # 0..16
    return images, torch.tensor(rows[:, -1], dtype=torch.int64)


@functools.cache
def bundled_digits_rows() -> np.ndarray:
    """scikit-learn's digits as its CSV file holds them: one row per image, 64 pixel values then
    the label (read-only). Read once per process: parsing the text is most of the time a
    notebook spends loading it, and the kernel template reads it before it forks kernels."""
    # The file scikit-learn's load_digits reads, read without importing scikit-learn (which takes
    # most of a second and pulls in SciPy).
    rows = np.loadtxt(_sklearn_file("datasets/data/digits.csv.gz"), delimiter=",")
    rows.flags.writeable = False  # every caller gets tensors copied from it, never the array
    return rows


def _sklearn_file(relative: str) -> Path:
    spec = importlib.util.find_spec("sklearn")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("scikit-learn is not installed (its digits are the default data)")
    return Path(next(iter(spec.submodule_search_locations))) / relative


def _find(folder: Path, stem: str, suffix: str) -> Path:
    # Both spellings exist in the wild: train-images-idx3-ubyte and train-images.idx3-ubyte.
    names = [f"{stem}{sep}{suffix}{gz}" for sep in ("-", ".") for gz in ("", ".gz")]
    for name in names:
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"no {stem}-{suffix} (or {stem}-{suffix}.gz) in MNIST folder {folder}")


def read_idx(path: str | Path) -> np.ndarray:
    """The array stored in an idx file (gzipped when the name ends in .gz).

    An idx file is a 4-byte magic number (0, 0, type code, number of dimensions), each dimension
    as a big-endian uint32, then the values in row-major order.
    """
    path = Path(path)
    try:
        with gzip.open(path) if path.suffix == ".gz" else path.open("rb") as file:
            data = file.read()
    except (gzip.BadGzipFile, EOFError) as error:
        raise ValueError(f"{path} is not a valid gzip file ({error})") from None
    if len(data) < 4 or data[:2] != b"\0\0" or data[2] not in IDX_DTYPES:
        raise ValueError(
            f"{path} is not an idx file: it starts with 0x{data[:4].hex() or 'nothing'}, "
            "expected 0x0000 then a type code (0x08 for unsigned bytes) and a dimension count"
        )
    dtype, ndim = IDX_DTYPES[data[2]], data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{path} is truncated: its header announces {ndim} dimensions")
    shape = struct.unpack(f">{ndim}I", data[4:header])
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) - header != expected:
        raise ValueError(
            f"{path} holds {len(data) - header} bytes of values, but its header says "
            f"{' x '.join(map(str, shape))} values of {dtype.itemsize} byte(s) = {expected} bytes"
        )
    return (
        np.frombuffer(data, dtype=dtype, offset=header)
        .reshape(shape)
        .astype(dtype.newbyteorder("="))
    )
