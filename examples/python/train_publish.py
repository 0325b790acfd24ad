#!/usr/bin/env python3
"""Trains a small PyTorch network on the bundled 8x8 digits and publishes it through the viper agent.

The network is the demo's 64-32-10 MLP, with the parameter names of Java's ``Mlp`` (``dense1.weight``,
``dense1.bias``, ``dense2.weight``, ``dense2.bias``), so that Java's ``ConsumerExample`` serves it as
it is. Every ``--every`` iterations ``viper.Producer.step`` copies the state_dict into the agent's
shared memory (the only stall); the agent announces and serves the version.

Prints one JSON line per published version: version, iteration, loss, stall and the SHA-256 of each
tensor's bytes as the state_dict holds them (what consumers must receive). With ``--lockstep`` it
waits for a line on stdin after each version, so that a test or a demo can keep consumers in step.

Needs a running agent (``./viper agent``), numpy and torch (Debian: python3-torch), and the client
(``pip install ./clients/python``, or PYTHONPATH=clients/python).
"""

import argparse
import gzip
import hashlib
import json
import os
import sys

import numpy as np
import torch

import viper

DIGITS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "viper-demo", "src", "main", "resources", "io",
                      "viper", "demo", "digits", "digits.csv.gz")


class Mlp(torch.nn.Module):
    """64 pixels -> 32 ReLU units -> 10 digits, named like Java's Mlp."""

    def __init__(self):
        super().__init__()
        self.dense1 = torch.nn.Linear(64, 32)
        self.dense2 = torch.nn.Linear(32, 10)

    def forward(self, x):
        return self.dense2(torch.relu(self.dense1(x)))


def load_digits():
    with gzip.open(DIGITS, "rt") as f:
        rows = np.loadtxt(f, delimiter=",", dtype=np.int64)
    return torch.tensor(rows[:, :64] / 16.0, dtype=torch.float32), torch.tensor(rows[:, 64])


def digests(state_dict):
    return {name: hashlib.sha256(t.detach().contiguous().numpy().tobytes()).hexdigest() for name, t in state_dict.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="digits")
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--every", type=int, default=100, help="publish every N iterations (default 100)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--agent", default=None, help="the agent's socket (default: viper.default_socket())")
    ap.add_argument("--lockstep", action="store_true", help="after each version, wait for a line on stdin")
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    x, y = load_digits()
    net = Mlp()
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    with viper.Producer(args.model, policy=viper.every(args.every), agent=args.agent) as producer:
        for it in range(1, args.iterations + 1):
            idx = torch.randint(0, len(x), (args.batch,))
            loss = torch.nn.functional.cross_entropy(net(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            published = producer.step(it, loss.item(), net.state_dict)
            if published:
                producer.flush()  # announced: consumers can fetch it now
                print(json.dumps({"version": published.version, "iteration": it, "loss": round(loss.item(), 6),
                                  "stall_ms": round(published.stall_s * 1e3, 3), "sha256": digests(net.state_dict())}), flush=True)
                if args.lockstep and not sys.stdin.readline():
                    break
        accuracy = (net(x).argmax(1) == y).float().mean().item()
        print(json.dumps({"done": producer.version, "accuracy": round(accuracy, 4)}), flush=True)


if __name__ == "__main__":
    main()
