"""The client against a running agent (the build's PythonClientIT starts one and names it in
VIPER_AGENT_SOCKET): what a producer publishes, a consumer leases byte for byte."""

import os
import threading
import time
import unittest
import uuid

import numpy as np

import viper

AGENT = os.environ.get("VIPER_AGENT_SOCKET")

try:
    import torch
except ImportError:  # the torch cases need Debian's python3-torch (scripts/setup-system.sh installs it)
    torch = None


def model_name(test):
    return "py-" + test.id().rsplit(".", 1)[-1][:40] + "-" + uuid.uuid4().hex[:6]


@unittest.skipUnless(AGENT, "needs a running agent named in VIPER_AGENT_SOCKET (PythonClientIT starts one)")
class AgentTest(unittest.TestCase):
    def setUp(self):
        self.model = model_name(self)
        self.closing = []

    def tearDown(self):
        for c in reversed(self.closing):
            c.close()

    def producer(self, **kw):
        p = viper.Producer(self.model, agent=AGENT, **kw)
        self.closing.append(p)
        return p

    def consumer(self):
        c = viper.Consumer(self.model, agent=AGENT)
        self.closing.append(c)
        return c

    def test_every_numpy_type_arrives_byte_identical(self):
        rng = np.random.default_rng(1)
        tensors = {
            "f64": rng.standard_normal((3, 4)), "f32": rng.standard_normal(7).astype(np.float32),
            "f16": rng.standard_normal((2, 2)).astype(np.float16), "i64": rng.integers(-9, 9, 5, dtype=np.int64),
            "i32": rng.integers(-9, 9, 5, dtype=np.int32), "i16": np.arange(4, dtype=np.int16), "i8": np.arange(-3, 3, dtype=np.int8),
            "u8": np.arange(9, dtype=np.uint8), "u16": np.arange(3, dtype=np.uint16), "u32": np.arange(3, dtype=np.uint32),
            "u64": np.arange(3, dtype=np.uint64), "flags": np.array([True, False, True]), "scalar": np.float32(2.5),
            "empty": np.zeros((0, 3), np.float32), "big_endian": np.arange(4, dtype=">i4"),
            "strided": np.arange(20, dtype=np.float32).reshape(4, 5)[:, 1:3],
        }
        c = self.consumer()
        p = self.producer()
        published = p.publish(tensors, metadata={"run": "numpy"})
        self.assertEqual(published.version, 1)
        c.wait_version(1, timeout=30)
        with c.current() as m:
            self.assertEqual(m.version, 1)
            self.assertEqual(list(m), list(tensors))
            self.assertEqual(m.metadata["run"], "numpy")
            for name, want in tensors.items():
                got = m[name]
                want = np.asarray(want)
                self.assertEqual(got.shape, want.shape, name)
                self.assertEqual(got.tobytes(), want.astype(want.dtype.newbyteorder("<")).tobytes(), name)
                self.assertFalse(got.flags.writeable, name)
            self.assertEqual(m.dtype("big_endian"), "I32")

    @unittest.skipUnless(torch, "needs torch (Debian's python3-torch)")
    def test_a_torch_state_dict_arrives_byte_identical_with_torch_views(self):
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
        extra = {"half": torch.randn(5, 5).to(torch.bfloat16), "mask": torch.rand(7) > 0.5, "steps": torch.tensor(7)}
        c = self.consumer()
        p = self.producer(policy=viper.every(1))
        sd = dict(net.state_dict(), **extra)
        self.assertEqual(p.step(1, 2.5, sd).version, 1)
        c.wait_version(1, timeout=30)
        with c.current() as m:
            views = m.torch()
            for name, t in sd.items():
                self.assertTrue(torch.equal(views[name], t), name)
                self.assertEqual(views[name].dtype, t.dtype, name)
                raw = t.contiguous().view(torch.uint8).numpy().tobytes() if t.dim() else t.reshape(1).view(torch.uint8).numpy().tobytes()
                self.assertEqual(m[name].tobytes(), raw, name)
            fresh = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
            fresh.load_state_dict({k: v for k, v in views.items() if k in net.state_dict()})
            x = torch.randn(3, 64)
            self.assertTrue(torch.equal(fresh(x), net(x)), "the leased weights infer exactly as the trained ones")

    def test_step_publishes_as_the_policy_says_and_refuses_iterations_that_do_not_increase(self):
        c = self.consumer()
        p = self.producer(policy=viper.every(3))
        w = np.zeros(4, np.float32)
        published = [p.step(it, 1.0 / it, lambda: {"w": w + it}) for it in range(1, 11)]
        self.assertEqual([r.version for r in published if r], [1, 2, 3])
        self.assertEqual([i + 1 for i, r in enumerate(published) if r], [3, 6, 9])
        self.assertTrue(all(r.stall_s >= 0 for r in published if r))
        self.assertEqual(p.flush(), 3)
        c.wait_version(3, timeout=30)
        with c.current() as m:
            self.assertEqual(m.metadata["viper.iteration"], "9")
            self.assertEqual(float(m.metadata["viper.loss"]), 1.0 / 9)
            np.testing.assert_array_equal(m["w"], w + 9)
        with self.assertRaises(viper.ViperConfigError) as e:
            p.step(10, 0.1, {"w": w})
        self.assertEqual(str(e.exception), "producer %s: iteration 10 does not follow 10" % self.model)

    def test_a_nan_or_inf_loss_publishes_and_the_steps_after_it_still_arrive(self):
        # fp16 spikes and divergence give non-finite losses mid-run: each step still publishes (the loss
        # goes into the metadata as Java writes it), and the producer keeps working.
        c = self.consumer()
        p = self.producer(policy=viper.every(1))
        losses = [0.5, float("nan"), float("inf"), 0.25, float("-inf"), 0.125]
        written = ["0.5", "NaN", "Infinity", "0.25", "-Infinity", "0.125"]  # Java's Double.toString
        for it, loss in enumerate(losses, 1):
            w = np.full(8, it, np.float32)
            self.assertEqual(p.step(it, loss, {"w": w}).version, it)
            c.wait_version(it, timeout=30)
            with c.current() as m:
                self.assertEqual(m.version, it)
                self.assertEqual(m.metadata["viper.iteration"], str(it))
                self.assertEqual(m.metadata["viper.loss"], written[it - 1])
                np.testing.assert_array_equal(m["w"], w)
        self.assertEqual(p.flush(), len(losses))

    def test_a_lease_holds_its_version_while_newer_ones_arrive(self):
        c = self.consumer()
        p = self.producer()
        p.publish({"w": np.full(1000, 1.0, np.float32)})
        c.wait_version(1, timeout=30)
        with c.current() as old:
            # Two receive buffers: v2 arrives in the free one while v1 stays leased in the other.
            p.publish({"w": np.full(1000, 2.0, np.float32)})
            c.wait_version(2, timeout=30)
            self.assertEqual(old.version, 1)
            self.assertTrue((old["w"] == 1.0).all(), "the version leased cannot change under the request")
            with c.current() as new:
                self.assertEqual(new.version, 2)
                self.assertTrue((new["w"] == 2.0).all())
            with self.assertRaises(ValueError):
                old["w"][0] = 9.0  # read-only

    def test_updates_are_reported_and_waiting_gives_up_in_time(self):
        c = self.consumer()
        seen = []
        arrived = threading.Event()
        c.on_update(lambda u: (seen.append(u), arrived.set()))
        with self.assertRaises(viper.ViperTimeoutError) as e:
            c.wait_version(1, timeout=0.2)
        self.assertIn("version 1 did not arrive within 0.2 s (serving 0)", str(e.exception))
        with self.assertRaises(viper.ViperNotFoundError) as e:
            c.current()
        self.assertIn("has no version on this agent yet", str(e.exception))
        p = self.producer()
        p.publish({"w": np.ones(3, np.float32)})
        self.assertEqual(c.wait_version(1, timeout=30), 1)
        self.assertTrue(arrived.wait(30))
        self.assertEqual((seen[0].model, seen[0].version, seen[0].previous), (self.model, 1, 0))
        self.assertGreater(seen[0].bytes, 0)
        self.assertEqual(seen[0].reused_bytes, 0, "a first version is pulled whole")

    def test_an_update_moves_only_the_blocks_that_changed(self):
        c = self.consumer()
        seen = []
        second = threading.Event()
        c.on_update(lambda u: (seen.append(u), u.version == 2 and second.set()))
        p = self.producer()
        frozen = np.arange(1 << 18, dtype=np.float32)  # 1 MiB: one block of the default viper.block.bytes
        p.publish({"frozen": frozen, "head": np.zeros(16, np.float32)})
        c.wait_version(1, timeout=30)
        p.publish({"frozen": frozen, "head": np.ones(16, np.float32)})
        self.assertTrue(second.wait(30), "version 2 arrived")
        update = next(u for u in seen if u.version == 2)
        self.assertEqual(update.reused_bytes, frozen.nbytes, "the unchanged block came from the version held")
        self.assertLess(update.bytes, frozen.nbytes)
        with c.current() as model:
            self.assertTrue(np.array_equal(model["frozen"], frozen))
            self.assertTrue(np.array_equal(model["head"], np.ones(16, np.float32)))

    def test_the_agent_copies_and_hashes_only_what_changed_since_the_staging_it_recycles(self):
        p = self.producer()
        frozen = np.arange(1 << 18, dtype=np.float32)  # 1 MiB: one block, one compared piece
        first = p.publish({"frozen": frozen, "head": np.zeros(16, np.float32)})
        self.assertEqual((first.copied_bytes, first.unchanged_bytes), (frozen.nbytes + 64, 0), "nothing to compare with yet")
        p.flush()
        shares = []
        for v in range(2, 22):
            # the agent keeps the two newest versions serving and recycles an older buffer once its
            # withdrawal (on a thread of its own) is done; until then it allocates another one
            published = p.publish({"frozen": frozen, "head": np.full(16, float(v), np.float32)})
            self.assertEqual(p.flush(), v)
            shares.append((published.copied_bytes, published.unchanged_bytes))
            if published.unchanged_bytes > 0:
                break
            time.sleep(0.05)
        self.assertEqual(shares[-1], (64, frozen.nbytes), "a recycled buffer: only the changed head copied; all: %s" % shares)
        self.assertTrue(all(c + u == frozen.nbytes + 64 for c, u in shares))

    def test_declared_changes_are_all_the_agent_reads(self):
        c = self.consumer()
        p = self.producer()
        frozen = np.arange(1 << 18, dtype=np.float32)  # 1 MiB: one compared unit
        head_only = {"head": None}
        p.publish({"frozen": frozen, "head": np.zeros(16, np.float32)}, changed=head_only)  # a first publish: not declared
        for v in range(2, 40):
            # frozen changes without being declared: taken at its word, a recycled staging buffer keeps its old
            # value; a new buffer (the agent allocates one until an older version's withdrawal is done) copies all
            frozen = frozen.copy()
            frozen[0] = 1000 + v
            published = p.publish({"frozen": frozen, "head": np.full(16, float(v), np.float32)}, changed=head_only)
            self.assertEqual(p.flush(), v)
            if published.unchanged_bytes > 0:
                break
            time.sleep(0.05)
        self.assertEqual((published.copied_bytes, published.unchanged_bytes), (64, frozen.nbytes), "only the declared head was read")
        c.wait_version(v, timeout=30)
        with c.current() as model:
            self.assertEqual(model.version, v)
            self.assertTrue(np.array_equal(model["head"], np.full(16, float(v), np.float32)))
            self.assertNotEqual(model["frozen"][0], 1000 + v, "the undeclared change was not read")
            self.assertTrue(np.array_equal(model["frozen"][1:], frozen[1:]))

    def test_declared_changes_are_all_the_trainer_copies_into_a_slot_it_reuses(self):
        c = self.consumer()
        p = self.producer()
        frozen = np.arange(1 << 16, dtype=np.float32)
        head = np.zeros(16, np.float32)
        first = p.publish({"frozen": frozen, "head": head}, changed={"head": None})
        self.assertEqual(first.written_bytes, frozen.nbytes + head.nbytes, "a first publish is copied whole")
        p.flush()  # every slot acknowledged: the next publish reuses the one that holds version 1
        head = np.ones(16, np.float32)
        second = p.publish({"frozen": frozen, "head": head}, changed={"head": None})
        self.assertEqual(second.written_bytes, head.nbytes, "only the declared tensor")
        p.flush()
        frozen = frozen.copy()
        frozen[1000:1002] = -1.0
        third = p.publish({"frozen": frozen, "head": head}, changed={"frozen": [(4000, 8)]})
        self.assertEqual(third.written_bytes, 8, "only the declared range")
        self.assertEqual(p.flush(), 3)
        c.wait_version(3, timeout=30)
        with c.current() as model:
            self.assertTrue(np.array_equal(model["frozen"], frozen))
            self.assertTrue(np.array_equal(model["head"], head))
        p.publish({"frozen": frozen, "head": head, "new": np.zeros(2, np.float32)}, changed={})
        self.assertEqual(p.publish({"frozen": frozen, "head": head}, changed={}).written_bytes, frozen.nbytes + head.nbytes,
                         "the slot held another layout: copied whole")

    @unittest.skipUnless(torch, "needs torch (Debian's python3-torch; scripts/setup-system.sh installs it)")
    def test_declared_changes_of_torch_tensors_arrive_byte_identical(self):
        c = self.consumer()
        p = self.producer()
        state = {"w": torch.arange(4096, dtype=torch.float32), "h": torch.zeros(3, 5, dtype=torch.bfloat16)}
        p.publish(state)
        p.flush()
        state["w"][100] = -7.0
        state["h"][1] = 2.5
        published = p.publish(state, changed={"w": [(400, 4)], "h": [(10, 10)]})
        self.assertEqual(published.written_bytes, 14, "the two declared ranges (h's row 1 is bytes 10 to 20)")
        self.assertEqual(p.flush(), 2)
        c.wait_version(2, timeout=30)
        with c.current() as model:
            self.assertTrue(torch.equal(model.torch("w"), state["w"]))
            self.assertTrue(torch.equal(model.torch("h"), state["h"]))

    def test_after_a_publish_that_failed_in_the_client_the_next_one_is_copied_whole(self):
        c = self.consumer()
        p = self.producer()
        frozen = np.arange(1 << 16, dtype=np.float32)
        head = np.zeros(16, np.float32)
        p.publish({"frozen": frozen, "head": head})
        p.flush()
        frozen = frozen.copy()
        frozen[7] = -1.0
        with self.assertRaises(viper.ViperConfigError):  # fails before anything reaches the agent, its changes with it
            p.publish({"frozen": frozen, "head": head, "bad": np.array(["text"])}, changed={"frozen": [(28, 4)]})
        # Relative to the failed call only head changed; relative to version 1, frozen did too.
        head = np.ones(16, np.float32)
        second = p.publish({"frozen": frozen, "head": head}, changed={"head": None})
        self.assertEqual(second.written_bytes, frozen.nbytes + head.nbytes, "not declared: copied whole")
        self.assertEqual(p.flush(), 2)
        c.wait_version(2, timeout=30)
        with c.current() as model:
            self.assertTrue(np.array_equal(model["frozen"], frozen), "frozen's change, declared by the failed call, arrived")
            self.assertTrue(np.array_equal(model["head"], head))

    def test_changes_that_name_other_tensors_or_ranges_past_them_are_refused(self):
        p = self.producer()
        tensors = {"w": np.zeros(4, np.float32)}
        p.publish(tensors)
        with self.assertRaises(viper.ViperConfigError) as e:
            p.publish(tensors, changed={"x": None})
        self.assertIn("changed names 'x', which is not among the published tensors", str(e.exception))
        with self.assertRaises(viper.ViperConfigError) as e:
            p.publish(tensors, changed={"w": [(8, 16)]})
        self.assertIn("changed['w']: (8, 16) is not a range of its 16 bytes", str(e.exception))
        self.assertEqual(p.publish(tensors, changed={"w": [(0, 4)]}).version, 2, "refused before the agent: no version taken")

    def test_the_agent_refusals_arrive_as_typed_errors(self):
        self.producer()
        with self.assertRaises(viper.ViperConfigError) as e:
            viper.Producer(self.model, agent=AGENT)
        self.assertIn("model %s already has a producer on this agent" % self.model, str(e.exception))
        with self.assertRaises(viper.ViperConfigError) as e:
            viper.Consumer("bad name!", agent=AGENT)
        self.assertIn("invalid model name 'bad name!'", str(e.exception))
        other = viper.Producer(self.model + "-2", agent=AGENT)
        self.closing.append(other)
        with self.assertRaises(viper.ViperConfigError) as e:
            other.publish({"c": np.zeros(2, np.complex64)})
        self.assertEqual(str(e.exception), "tensor 'c': numpy dtype complex64 has no safetensors type")

    def test_a_refused_publish_takes_no_version_and_is_raised_once(self):
        p = self.producer()
        refused = p.publish({"": np.zeros(2, np.float32)})
        with self.assertRaises(viper.ViperConfigError) as e:
            refused.version
        self.assertIn("tensor name must not be empty", str(e.exception))
        first = p.publish({"w": np.ones(2, np.float32)})  # no second raise of the refusal read above
        second = p.publish({"w": np.full(2, 2.0, np.float32)})
        self.assertEqual((first.version, second.version), (1, 2))
        self.assertEqual(p.flush(), 2)
        late = p.publish({"": np.zeros(2, np.float32)})
        with self.assertRaises(viper.ViperConfigError):
            p.flush()  # a refusal nobody read is raised by the next call
        self.assertEqual(p.publish({"w": np.full(2, 3.0, np.float32)}).version, 3)

    def test_closed_things_refuse_to_be_used(self):
        c = self.consumer()
        p = self.producer()
        p.publish({"w": np.ones(3, np.float32)})
        c.wait_version(1, timeout=30)
        lease = c.current()
        lease.close()
        lease.close()
        with self.assertRaises(viper.ViperClosedError):
            lease["w"]
        p.close()
        with self.assertRaises(viper.ViperClosedError):
            p.publish({"w": np.ones(3, np.float32)})
        c.close()
        with self.assertRaises(viper.ViperClosedError):
            c.current()

    def test_checkpoints_that_grow_get_larger_slots(self):
        c = self.consumer()
        p = self.producer()
        for v, n in enumerate([10, 100_000, 10, 1_000_000, 5], start=1):
            p.publish({"w": np.arange(n, dtype=np.float32)})
        p.flush()
        c.wait_version(5, timeout=30)
        with c.current() as m:
            np.testing.assert_array_equal(m["w"], np.arange(5, dtype=np.float32))
        self.assertLessEqual(len(p._slots), viper.Producer.SLOTS)

    def test_slot_files_deleted_under_the_agent_do_not_stop_the_producer(self):
        c = self.consumer()
        p = self.producer()
        p.publish({"w": np.full(10, 1.0, np.float32)})
        p.flush()
        paths = [s.path for s in p._slots]
        for f in paths:
            os.unlink(f)  # what a /dev/shm cleaner (or systemd's RemoveIPC) does
        for v in (2, 3, 4):
            p.publish({"w": np.full(10, float(v), np.float32)})
        self.assertEqual(p.flush(), 4)
        c.wait_version(4, timeout=30)
        with c.current() as m:
            np.testing.assert_array_equal(m["w"], np.full(10, 4.0, np.float32))
        self.assertFalse(set(paths) & {s.path for s in p._slots}, "the deleted slots were retired")

    def test_a_receive_file_deleted_under_the_agent_is_read_from_a_copy_and_forgotten(self):
        c = self.consumer()
        p = self.producer()
        p.publish({"w": np.arange(50, dtype=np.float32)})
        c.wait_version(1, timeout=30)
        with c.current() as m:
            first = m._buffer
            np.testing.assert_array_equal(m["w"], np.arange(50, dtype=np.float32))
        in_place = [path for path, mapped in c._files._maps.items() if mapped is first][0]
        self.assertTrue(in_place.endswith("-model"), in_place)
        os.unlink(in_place)  # what a /dev/shm cleaner does
        with c.current() as m:
            np.testing.assert_array_equal(m["w"], np.arange(50, dtype=np.float32))
        self.assertNotIn(in_place, c._files._maps, "the client forgot the mapping of the removed file")
        self.assertTrue(any(path.endswith("-copy") for path in c._files._maps))

    def test_a_producer_that_exits_leaves_its_versions_served_and_a_new_one_continues(self):
        p = self.producer()
        p.publish({"w": np.full(4, 1.0, np.float32)})
        p.close()
        c = self.consumer()
        c.wait_version(1, timeout=30)
        again = self.producer()
        self.assertEqual(again.version, 1)
        self.assertEqual(again.publish({"w": np.full(4, 2.0, np.float32)}).version, 2)
        c.wait_version(2, timeout=30)

    def test_the_agent_leaves_no_slot_files_of_closed_producers(self):
        p = self.producer()
        p.publish({"w": np.ones(100, np.float32)})
        paths = [s.path for s in p._slots]
        self.assertTrue(paths and all(os.path.exists(f) for f in paths))
        p.close()
        for _ in range(100):
            if not any(os.path.exists(f) for f in paths):
                break
            threading.Event().wait(0.05)  # the agent frees them when it sees the connection end
        self.assertEqual([f for f in paths if os.path.exists(f)], [])


if __name__ == "__main__":
    unittest.main()
