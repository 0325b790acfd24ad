"""Tied weights are stored once and read under both names; tensors that cannot be published are refused
naming them; a lease's torch views leave Python's warning registry alone."""

import os
import unittest
import uuid
import warnings

import numpy as np

import viper
from viper import _safetensors as st
from viper.consumer import ModelLease
from viper.producer import _describe, _ties

AGENT = os.environ.get("VIPER_AGENT_SOCKET")

try:
    import torch
except ImportError:  # the torch cases need Debian's python3-torch (scripts/setup-system.sh installs it)
    torch = None


class _Consumer:
    model = "m"

    def _release(self, lease):
        pass


def _lease(tensors, metadata):
    """A lease over an image built here, as the agent's shared memory would hold it."""
    described = [(n, st.dtype_of_numpy(a.dtype), a.shape, a.nbytes) for n, a in tensors.items()]
    image = bytearray(st.encode_header(described, metadata))
    for a in tensors.values():
        image += a.tobytes()
    buffer = bytes(image)
    return ModelLease(_Consumer(), {"lease": 1, "version": 1}, buffer, st.parse_header(buffer, 0, "test"))


class TiedTest(unittest.TestCase):
    @unittest.skipUnless(torch, "needs torch (Debian's python3-torch)")
    def test_a_tied_torch_embedding_is_one_tensor_and_a_view_of_another_shape_is_not(self):
        tok = torch.nn.Embedding(10, 4)
        head = torch.nn.Linear(4, 10)
        head.weight = tok.weight
        sd = {"tok.weight": tok.weight, "head.weight": head.weight, "head.bias": head.bias,
              "flat": tok.weight.view(-1), "copy": tok.weight.detach().clone()}
        self.assertEqual(_ties(sd), {"head.weight": "tok.weight"})
        net = torch.nn.Sequential(tok, head)
        self.assertEqual(_ties(net.state_dict()), {"1.weight": "0.weight"})

    def test_the_same_numpy_array_under_two_names_is_one_tensor(self):
        a = np.arange(6, dtype=np.float32)
        self.assertEqual(_ties({"a": a, "b": a, "c": a.copy(), "d": a[::2], "e": np.zeros(0)}), {"b": "a"})

    def test_a_lease_reads_an_alias_from_its_tensor_memory(self):
        tok = np.arange(12, dtype=np.float32).reshape(3, 4)
        lease = _lease({"tok.weight": tok, "bias": np.ones(3, np.float32)},
                       {"head.weight": "tok.weight", "run": "a", "bias": "tok.weight"})
        self.assertEqual(lease.aliases, {"head.weight": "tok.weight"})
        self.assertEqual(list(lease), ["tok.weight", "bias", "head.weight"])
        self.assertEqual(len(lease), 3)
        self.assertTrue(np.shares_memory(lease["head.weight"], lease["tok.weight"]))
        np.testing.assert_array_equal(lease["head.weight"], tok)
        with self.assertRaises(viper.ViperNotFoundError):
            lease["run"]
        if torch is not None:
            views = lease.torch()
            self.assertIs(views["head.weight"], views["tok.weight"])

    @unittest.skipUnless(torch, "needs torch (Debian's python3-torch)")
    def test_torch_views_leave_the_warning_registry_alone(self):
        lease = _lease({"w": np.ones(4, np.float32)}, None)

        def warn():
            warnings.warn("an application's warning, shown once per place", UserWarning)

        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("default")
            lease.torch("w")  # the first call may install its filter once
            for _ in range(3):
                warn()
                lease.torch("w")
        self.assertEqual([str(w.message) for w in shown], ["an application's warning, shown once per place"])

    @unittest.skipUnless(torch, "needs torch (Debian's python3-torch)")
    def test_meta_sparse_and_nested_values_are_refused_naming_the_tensor(self):
        meta = torch.empty(3, 4, device="meta")
        sparse = torch.eye(3).to_sparse()
        opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters())
        for name, value, says in (("w", meta, "tensor 'w' is on the meta device"),
                                  ("s", sparse, "tensor 's' has layout torch.sparse_coo"),
                                  ("state", opt.state_dict()["state"], "tensor 'state' is a dict, not a tensor"),
                                  ("param_groups", opt.state_dict()["param_groups"], "tensor 'param_groups' is a list")):
            with self.assertRaises(viper.ViperConfigError) as e:
                _describe(name, value)
            self.assertIn(says, str(e.exception))
        self.assertEqual(_describe("numbers", [1.5, 2.5])[:3], ("F64", (2,), 16), "a list of numbers is an array")


@unittest.skipUnless(AGENT, "needs a running agent named in VIPER_AGENT_SOCKET (PythonClientIT starts one)")
@unittest.skipUnless(torch, "needs torch (Debian's python3-torch)")
class TiedAgentTest(unittest.TestCase):
    def test_tied_weights_are_sent_once_and_leased_under_both_names(self):
        model = "py-tied-" + uuid.uuid4().hex[:6]
        torch.manual_seed(0)
        tok = torch.nn.Embedding(100, 16)
        head = torch.nn.Linear(16, 100)
        head.weight = tok.weight
        net = torch.nn.Sequential(tok, head)
        sd = net.state_dict()
        with viper.Consumer(model, agent=AGENT) as c, viper.Producer(model, agent=AGENT) as p:
            published = p.step(1, float("nan"), net.state_dict)
            self.assertEqual(published.written_bytes, (100 * 16 + 100) * 4, "the embedding is written once")
            c.wait_version(published.version, timeout=30)
            with c.current() as m:
                self.assertEqual(m.metadata["1.weight"], "0.weight")
                self.assertEqual(sorted(m), sorted(sd))
                self.assertTrue(np.shares_memory(m["1.weight"], m["0.weight"]))
                for name, t in sd.items():
                    self.assertEqual(m[name].tobytes(), t.numpy().tobytes(), name)
                with self.assertRaises(viper.ViperConfigError) as e:
                    p.publish(sd, metadata={"1.weight": "mine"})
                self.assertIn("tensor '1.weight' is tied to '0.weight'", str(e.exception))


if __name__ == "__main__":
    unittest.main()
