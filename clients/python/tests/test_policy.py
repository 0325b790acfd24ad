"""Checkpoint policies decide as Java's CheckpointPolicy does (the cases are Java's own)."""

import unittest

import numpy as np

import viper


class PolicyTest(unittest.TestCase):
    def test_every_publishes_the_multiples_of_n(self):
        p = viper.every(3)
        self.assertEqual([i for i in range(0, 13) if p(i, 0.0)], [3, 6, 9, 12])
        self.assertFalse(p(-3, 0.0), "iteration 0 and below never publish")
        self.assertEqual(repr(p), "every(3)")

    def test_every_refuses_what_is_not_a_positive_integer(self):
        for bad in (0, -1, 2.5, True, "3"):
            with self.assertRaises(viper.ViperConfigError) as e:
                viper.every(bad)
            self.assertIn("n must be a positive integer", str(e.exception))

    def test_at_iterations_publishes_exactly_those(self):
        p = viper.at_iterations(10, 3, 7)
        self.assertEqual([i for i in range(20) if p(i, 1.0)], [3, 7, 10])
        self.assertEqual(repr(p), "at_iterations(3, 7, 10)")
        self.assertEqual(repr(viper.at_iterations(*range(9))), "at_iterations(9 iterations)")

    def test_at_iterations_refuses_what_is_not_an_integer(self):
        for bad in ("x", 2.5, None, True):
            with self.assertRaises(viper.ViperConfigError) as e:
                viper.at_iterations(1, bad)
            self.assertIn("iterations must be integers", str(e.exception))
        self.assertTrue(viper.at_iterations(np.int64(4))(4, 0.0), "numpy's integers are integers")

    def test_never_never_publishes(self):
        self.assertFalse(any(viper.never()(i, 0.0) for i in range(100)))

    def test_any_callable_is_a_policy(self):
        by_loss = lambda iteration, loss: loss < 0.5  # noqa: E731
        self.assertTrue(by_loss(1, 0.4))


if __name__ == "__main__":
    unittest.main()
