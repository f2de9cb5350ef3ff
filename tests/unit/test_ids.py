"""Ids take their 128 random bits from a pool of the OS's random bytes (docs/DECISIONS.md D80)."""

from __future__ import annotations

import os
import re

from groupx_site.core import ids

ID = re.compile(r"evt_[0-9a-f]{32}")


def test_ids_are_a_prefix_and_32_hex_digits_and_never_repeat_across_refills_of_the_pool():
    made = [ids.event_id() for _ in range(3 * ids.POOL_IDS + 5)]

    assert all(ID.fullmatch(made_id) for made_id in made)
    assert len(set(made)) == len(made)
    assert ids.turn_id().startswith("turn_") and ids.correlation_id().startswith("corr_")


def test_a_forked_child_hands_out_other_bits_than_its_parent():
    ids.event_id()  # the pool holds bits the child would otherwise inherit
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, then out without running the parent's exit handlers
        os.write(write_end, ids.event_id().encode())
        os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    with os.fdopen(read_end, "rb") as pipe:
        child_id = pipe.read().decode()

    assert ID.fullmatch(child_id) and child_id != ids.event_id()
