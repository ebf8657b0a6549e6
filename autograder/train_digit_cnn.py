"""Train the CNN notebook's DigitCNN and write its weights: `python -m autograder.train_digit_cnn`.

The notebook loads these weights instead of training in every run (and in every graded run of
every student). Training is deterministic: seed 0, full-batch Adam, one CPU thread, so the same
code gives the same weights, and the file the same bytes. `--check` compares instead of writing.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from collections.abc import Iterator
from pathlib import Path

import torch
import torch.nn.functional as F

from autograder.digits import DIGIT_CNN_WEIGHTS, load_digits_images
from autograder.exercises.cnn_hooks.models import make_digit_cnn

SEED = 0
STEPS = 30
LEARNING_RATE = 0.01
TRAIN_SIZE = 1500  # the notebook keeps scikit-learn's other 297 digits as its test set


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    # Sums split over threads may round differently; one thread gives one answer everywhere.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def training_data() -> tuple[torch.Tensor, torch.Tensor]:
    """The notebook's training set: the first 1,500 digits, enlarged to 16 x 16 as it does."""
    images, labels = load_digits_images()
    images = F.interpolate(images, scale_factor=2, mode="bilinear", align_corners=False)
    return images[:TRAIN_SIZE], labels[:TRAIN_SIZE]


def train() -> dict[str, torch.Tensor]:
    """The trained weights: seed 0, then 30 full-batch Adam steps (lr 0.01) on cross-entropy."""
    train_x, train_y = training_data()
    with single_thread(), torch.random.fork_rng():
        torch.manual_seed(SEED)
        model = make_digit_cnn()  # the notebook's DigitCNN: same layers, same creation order
        optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
        for _ in range(STEPS):
            optimizer.zero_grad()
            F.cross_entropy(model(train_x), train_y).backward()
            optimizer.step()
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


def serialise(state: dict[str, torch.Tensor]) -> bytes:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DIGIT_CNN_WEIGHTS, help="where to write")
    parser.add_argument("--check", action="store_true", help="compare with --out, write nothing")
    args = parser.parse_args(argv)
    data = serialise(train())
    if args.check:
        same = args.out.is_file() and args.out.read_bytes() == data
        print(f"{args.out}: {'up to date' if same else 'differs from a fresh training run'}")
        return 0 if same else 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(data)
    print(f"wrote {args.out} ({len(data):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
