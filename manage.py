#!/usr/bin/env python3
"""Django's command-line utility for GroupX. ``--config PATH`` selects groupx.json for any command."""

import os
import sys


def take_config_flag(argv: list[str]) -> list[str]:
    """Strip ``--config PATH`` / ``--config=PATH`` and export it as GROUPX_CONFIG before settings load."""
    out, i = [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--config" and i + 1 < len(argv):
            os.environ["GROUPX_CONFIG"] = argv[i + 1]
            i += 2
            continue
        if arg.startswith("--config="):
            os.environ["GROUPX_CONFIG"] = arg.split("=", 1)[1]
        else:
            out.append(arg)
        i += 1
    return out


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "groupx_site.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(take_config_flag(sys.argv))


if __name__ == "__main__":
    main()
