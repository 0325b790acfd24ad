#!/usr/bin/env python3
"""Serves the digits model from the viper agent: a Python inference server in a few lines.

Follows ``--model`` through the agent; for every update it takes a lease (the version cannot change
under it), answers a request with numpy from the leased weights and prints one JSON line: version,
path, latency, the predicted digit and the SHA-256 of each tensor's bytes. Stops once it served
version ``--until``.
"""

import argparse
import hashlib
import json
import queue

import numpy as np

import viper


def predict(model, pixels):
    hidden = np.maximum(model["dense1.weight"] @ pixels + model["dense1.bias"], 0)
    return int(np.argmax(model["dense2.weight"] @ hidden + model["dense2.bias"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="digits")
    ap.add_argument("--until", type=int, default=20, help="stop after serving this version")
    ap.add_argument("--timeout", type=float, default=120, help="give up when no update arrives for this long (s)")
    ap.add_argument("--agent", default=None, help="the agent's socket (default: viper.default_socket())")
    args = ap.parse_args()

    updates = queue.Queue()
    with viper.Consumer(args.model, agent=args.agent) as consumer:
        consumer.on_update(updates.put)  # on the client's reader thread: just hand it over
        print(json.dumps({"following": args.model, "serving": consumer.version}), flush=True)
        while consumer.version < args.until:
            update = updates.get(timeout=args.timeout)
            with consumer.current() as model:
                digit = predict(model, np.full(64, 0.5, np.float32))
                print(json.dumps({"version": model.version, "path": update.path, "latency_ms": update.latency_ms, "digit": digit,
                                  "sha256": {n: hashlib.sha256(model[n].tobytes()).hexdigest() for n in model}}), flush=True)


if __name__ == "__main__":
    main()
