"""The speed seam's switch (groupx_site/speedups/switches.py): ``server.speedups`` is true, false or an
object of per-mechanism booleans, and ``server.threadsOnOneCpu`` of older files still counts."""

from __future__ import annotations

import pytest

from groupx_site.speedups import switches as speedups_switches
from setup_wizard.config import ConfigError, parse_config


def switches(server: dict) -> dict[str, bool]:
    return parse_config({"server": server}).server.speedups_on()


def test_every_mechanism_is_on_by_default():
    assert switches({}) == dict.fromkeys(speedups_switches.NAMES, True)


def test_false_turns_every_mechanism_off():
    assert switches({"speedups": False}) == dict.fromkeys(speedups_switches.NAMES, False)


def test_an_object_turns_off_the_names_it_sets_false_and_leaves_the_others_on():
    on = switches({"speedups": {"groupCommit": False, "handoff": True}})
    assert on["groupCommit"] is False
    assert all(on[name] for name in speedups_switches.NAMES if name != "groupCommit")


def test_the_older_threads_on_one_cpu_key_still_turns_the_pinning_off():
    assert switches({"threadsOnOneCpu": False}) == {name: name != "threadsOnOneCpu" for name in speedups_switches.NAMES}
    assert switches({"threadsOnOneCpu": False, "speedups": {"threadsOnOneCpu": True}})["threadsOnOneCpu"] is False


def test_an_unknown_mechanism_is_refused_naming_the_key():
    with pytest.raises(ConfigError, match=r"server\.speedups.*unknown speedup 'warpDrive'"):
        parse_config({"server": {"speedups": {"warpDrive": False}}})


def test_a_switch_that_is_not_a_boolean_is_refused():
    with pytest.raises(ConfigError, match=r"server\.speedups"):
        parse_config({"server": {"speedups": "off"}})


def test_each_mechanism_says_what_it_cuts_in_one_line():
    assert tuple(speedups_switches.MECHANISMS) == speedups_switches.NAMES
    assert all(text and "\n" not in text for text in speedups_switches.MECHANISMS.values())


def test_the_process_reads_the_switch_from_its_settings(settings):
    settings.GROUPX_CONFIG = parse_config({"server": {"speedups": {"walCheckpoints": False}}})
    speedups_switches.forget()
    try:
        assert speedups_switches.is_on("walCheckpoints") is False and speedups_switches.is_on("handoff") is True
        assert speedups_switches.active()["walCheckpoints"] is False
        with pytest.raises(speedups_switches.UnknownSpeedup):
            speedups_switches.is_on("warpDrive")
    finally:
        speedups_switches.forget()
