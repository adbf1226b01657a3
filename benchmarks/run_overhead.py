#!/usr/bin/env python
"""What does ``torchcheck run``'s watch cost a training step?

Times one training step -- ``zero_grad()``, forward, loss, ``backward()``, ``step()`` -- of two small
models on CPU, side by side in one run:

- unwatched;
- inside ``Watcher()``: the default runtime checks, what ``torchcheck run`` installs (target: at most
  **1.3x** the unwatched step, issue #23);
- inside ``Watcher([CODE])`` for each runtime check alone, opt-in ones included (information: which
  check costs what).

Models (float32, CPU, ``torch.manual_seed(0)``, one intra-op thread by default):

- cnn: two conv-BatchNorm-ReLU-maxpool blocks (3->16->32 channels), dropout and a linear head, batch
  32 of 3x32x32 images, cross-entropy, Adam;
- transformer: an embedding, two ``nn.TransformerEncoderLayer`` (d_model 128, 4 heads, feed-forward
  256, dropout 0.1) and a linear head over a 512-token vocabulary, batch 8 of 64 tokens, next-token
  cross-entropy, AdamW.

Each mode runs a block of ``--steps`` steps per round, the modes interleaved and their order rotated
from round to round, every step timed on its own; the median step time over all rounds is reported.
The watch is entered once per block (its set-up is not a step's cost). Exits 0 whether or not the
target is met (a benchmark, not a test). Numbers: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _report import table, verdict, write_json  # noqa: E402  (benchmarks/ is on sys.path as a script)
from pytest_torchcheck.watch.watcher import Watcher, codes, default_codes  # noqa: E402

TARGET = 1.3


def cnn():
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.2), nn.Linear(32 * 8 * 8, 10))
    x, y = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))
    return model, torch.optim.Adam(model.parameters(), lr=1e-3), lambda m: nn.functional.cross_entropy(m(x), y)


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 512, d: int = 128) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, 4, 256, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(tokens)))


def transformer():
    model = TinyLM()
    tokens = torch.randint(0, 512, (8, 65))

    def loss(m):
        logits = m(tokens[:, :-1])
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))

    return model, torch.optim.AdamW(model.parameters(), lr=1e-3), loss


WORKLOADS = {"cnn": cnn, "transformer": transformer}


def block(model, opt, loss_of, steps: int, watch) -> list[float]:
    times = []
    with watch():
        for _ in range(steps):
            start = time.perf_counter()
            opt.zero_grad()
            loss_of(model).backward()
            opt.step()
            times.append(time.perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="steps per block (default 20)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    parser.add_argument("--models", default="cnn,transformer")
    parser.add_argument("--no-per-check", action="store_true", help="only unwatched and the default checks")
    parser.add_argument("--json", type=Path, help="also write the results there")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    defaults = default_codes()
    modes: dict[str, object] = {"unwatched": contextlib.nullcontext, "default checks": lambda: Watcher()}
    if not args.no_per_check:
        for code in codes():
            modes[code] = (lambda c: lambda: Watcher([c]))(code)
    print(f"torch {torch.__version__}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"{args.threads} thread(s); default checks: {', '.join(defaults)}")
    results: dict[str, dict[str, float]] = {}
    ok = True
    for name in args.models.split(","):
        torch.manual_seed(0)
        model, opt, loss_of = WORKLOADS[name]()
        block(model, opt, loss_of, 5, contextlib.nullcontext)  # warm-up
        samples: dict[str, list[float]] = {m: [] for m in modes}
        order = list(modes)
        for r in range(args.rounds):
            for mode in order[r % len(order):] + order[:r % len(order)]:
                samples[mode] += block(model, opt, loss_of, args.steps, modes[mode])
        base = statistics.median(samples["unwatched"])
        results[name] = {m: statistics.median(s) / base for m, s in samples.items()}
        results[name]["unwatched_ms"] = base * 1000
        met = results[name]["default checks"] <= TARGET
        ok = ok and met
        rows = [["mode", "median step", "ratio"]]
        rows += [[m, f"{statistics.median(s) * 1000:.2f} ms", f"{statistics.median(s) / base:.2f}x"]
                 for m, s in samples.items()]
        print(f"\n{name}:")
        print(table(rows, {1, 2}))
        print(f"  default checks {results[name]['default checks']:.2f}x (target at most {TARGET}x): "
              f"{verdict(met)}")
    if args.json:
        write_json(args.json, {"defaults": defaults, "results": results, "target": TARGET}, print)
    return 0


if __name__ == "__main__":
    sys.exit(main())
