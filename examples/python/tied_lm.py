#!/usr/bin/env python3
"""A language model with tied input and output embeddings, trained and served through viper agents.

``train``: a small transformer written with ``torch.nn`` (about 21 M parameters with the defaults: a
32000 x 512 token embedding that the output head shares, ``head.weight = tok.weight``, and two encoder
layers) trained with AdamW on random token batches, published every ``--every`` steps. At step
``--nan-at`` the loss is NaN, as an fp16 overflow makes it: the optimizer skips that step (as a
gradient scaler does) and the step is still published, with its NaN loss. Prints one JSON line per
version: version, iteration, loss, the bytes written to the agent and the SHA-256 of each tensor of
the state_dict (the tied name included). With ``--lockstep`` it waits for a line on stdin after each.

``serve``: follows the model through an agent until ``--until``; per version it runs a forward pass on
the leased memory and prints the version, its aliases and the SHA-256 of each name the lease has.

Needs numpy and torch (Debian: python3-torch) and the client (PYTHONPATH=clients/python).
"""

import argparse
import hashlib
import json
import math
import queue
import sys

import torch

import viper


class TiedLm(torch.nn.Module):
    def __init__(self, vocab, width, layers):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, width)
        layer = torch.nn.TransformerEncoderLayer(width, nhead=8, dim_feedforward=2 * width, batch_first=True)
        self.body = torch.nn.TransformerEncoder(layer, layers)
        self.head = torch.nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tok.weight  # tied: one tensor, two names in the state_dict

    def forward(self, tokens):
        return self.head(self.body(self.tok(tokens)))


def digests(tensors):
    return {name: hashlib.sha256(t.detach().contiguous().numpy().tobytes()).hexdigest() for name, t in tensors.items()}


def train(args):
    torch.manual_seed(args.seed)
    net = TiedLm(args.vocab, args.width, args.layers)
    params = sum(p.numel() for p in net.parameters())  # a tied tensor counts once
    print(json.dumps({"parameters": params, "state_dict": len(net.state_dict())}), flush=True)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    with viper.Producer(args.model, policy=viper.every(args.every), agent=args.agent) as producer:
        for it in range(1, args.steps + 1):
            tokens = torch.randint(0, args.vocab, (args.batch, args.seq))
            logits = net(tokens[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, args.vocab), tokens[:, 1:].reshape(-1))
            opt.zero_grad()
            if it == args.nan_at:
                loss = loss * math.nan  # an overflow: the step is skipped, the loss reported as it is
            else:
                loss.backward()
                opt.step()
            published = producer.step(it, loss.item(), net.state_dict)
            if published:
                producer.flush()
                print(json.dumps({"version": published.version, "iteration": it, "loss": str(loss.item()),
                                  "written_bytes": published.written_bytes, "sha256": digests(net.state_dict())}),
                      flush=True)
                if args.lockstep and not sys.stdin.readline():
                    break
    print(json.dumps({"done": producer.version}), flush=True)


def serve(args):
    updates = queue.Queue()
    with viper.Consumer(args.model, agent=args.agent) as consumer:
        consumer.on_update(updates.put)
        print(json.dumps({"following": args.model}), flush=True)
        while consumer.version < args.until:
            updates.get(timeout=args.timeout)
            with consumer.current() as model:
                views = model.torch()
                net = TiedLm(args.vocab, args.width, args.layers)
                net.load_state_dict(views)  # the tied name comes with the memory of the stored one
                net.eval()
                with torch.no_grad():
                    out = net(torch.zeros(1, 4, dtype=torch.long))
                print(json.dumps({"version": model.version, "loss": model.metadata.get("viper.loss"),
                                  "aliases": model.aliases, "finite": bool(torch.isfinite(out).all()),
                                  "sha256": {n: hashlib.sha256(model[n].tobytes()).hexdigest() for n in model}}),
                      flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("train", "serve"))
    ap.add_argument("--model", default="tied-lm")
    ap.add_argument("--agent", default=None, help="the agent's socket (default: viper.default_socket())")
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--every", type=int, default=2, help="publish every N steps")
    ap.add_argument("--nan-at", type=int, default=4, help="the step whose loss is NaN")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=17)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--lockstep", action="store_true", help="after each version, wait for a line on stdin")
    ap.add_argument("--until", type=int, default=4, help="serve: stop after this version")
    ap.add_argument("--timeout", type=float, default=120, help="serve: give up when no update comes for this long (s)")
    args = ap.parse_args()
    train(args) if args.mode == "train" else serve(args)


if __name__ == "__main__":
    main()
