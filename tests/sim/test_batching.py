"""Splitting a batch into groups (sim.field.batching)."""

import pytest

from sim.field.batching import groups_of_at_most, instance_groups


def covered(groups, batch):
    return [index for group in groups for index in range(batch)[group]]


@pytest.mark.parametrize("batch, groups", [(7, 3), (100, 4), (5, 8), (1, 2)])
def test_instance_groups_cover_the_batch_in_order_with_sizes_one_apart(batch, groups):
    slices = instance_groups(batch, groups)
    assert covered(slices, batch) == list(range(batch))
    sizes = [len(range(batch)[group]) for group in slices]
    assert len(slices) == min(groups, batch) and max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("batch, instance_bytes, group_bytes, multiple, expected_count", [
    (100, 200_000, 8 << 20, 2, 4),    # Fig. 4 in two workers, parts of 8 MiB: 2 parts each of 25 trajectories
    (100, 200_000, 2 << 20, 2, 10),   # parts of 2 MiB (PART_BYTES): 5 parts each of 10 trajectories
    (100, 200_000, 4 << 20, 1, 5),    # groups of 4 MiB: 20 trajectories
    (1000, 240, 8 << 20, 2, 2),       # 1000 figure-2 systems: one part per worker
    (13, 240, 1200, 2, 4),            # 5 instances a group at most -> 3 groups, rounded up to a multiple of 2
    (3, 10_000, 100, 1, 3),           # instances larger than a group: one each
])
def test_groups_of_at_most_keep_within_the_bytes_and_a_multiple_of_the_workers(batch, instance_bytes, group_bytes,
                                                                                 multiple, expected_count):
    slices = groups_of_at_most(batch, instance_bytes, group_bytes, multiple_of=multiple)
    assert len(slices) == expected_count and covered(slices, batch) == list(range(batch))
    largest = max(len(range(batch)[group]) for group in slices)
    assert largest * instance_bytes <= max(group_bytes, instance_bytes)
