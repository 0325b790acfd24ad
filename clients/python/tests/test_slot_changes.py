"""Which bytes a producer writes into a slot it reuses: the union of the changes declared since the
image the slot holds, or everything when that is not known (no agent needed)."""

import unittest

from viper.producer import Producer, _merge


class _Slot:
    def __init__(self, held):
        self.held = held


def producer_with(declared):
    p = Producer.__new__(Producer)  # no agent: only the bookkeeping of declared changes
    p._declared = declared
    return p


LAYOUT = (64, (("a", "F32", (8,), 32), ("b", "U8", (100,), 100)))
OTHER = (64, (("a", "F32", (8,), 32),))


class SlotChangesTest(unittest.TestCase):
    def test_the_changes_since_the_slots_image_are_merged(self):
        p = producer_with({2: (LAYOUT, {"a": [0, 4], "b": []}), 3: (LAYOUT, {"a": [2, 8], "b": [50, 60]})})
        ranges = p._ranges_to_write(_Slot((1, LAYOUT)), LAYOUT, 4, {"a": [], "b": [10, 20, 55, 70]})
        self.assertEqual(ranges, {"a": [(0, 8)], "b": [(10, 20), (50, 70)]})

    def test_a_publish_in_between_without_changes_or_with_another_layout_means_everything(self):
        for between in ((LAYOUT, None), (OTHER, {"a": []}), None):
            declared = {2: (LAYOUT, {"a": [], "b": []})}
            if between is not None:
                declared[3] = between
            p = producer_with(declared)
            self.assertIsNone(p._ranges_to_write(_Slot((1, LAYOUT)), LAYOUT, 4, {"a": [], "b": []}), between)

    def test_a_slot_holding_nothing_known_or_another_layout_is_written_whole(self):
        p = producer_with({})
        self.assertIsNone(p._ranges_to_write(_Slot(None), LAYOUT, 2, {"a": [], "b": []}))
        self.assertIsNone(p._ranges_to_write(_Slot((1, OTHER)), LAYOUT, 2, {"a": [], "b": []}))
        self.assertIsNone(p._ranges_to_write(_Slot((1, LAYOUT)), LAYOUT, 2, None), "this publish declares nothing")
        self.assertEqual(p._ranges_to_write(_Slot((1, LAYOUT)), LAYOUT, 2, {"a": [], "b": []}), {"a": [], "b": []})

    def test_merge_sorts_joins_and_drops_empty_ranges(self):
        self.assertEqual(_merge([10, 20, 0, 5, 15, 30, 40, 40, 5, 6]), [(0, 6), (10, 30)])


if __name__ == "__main__":
    unittest.main()
