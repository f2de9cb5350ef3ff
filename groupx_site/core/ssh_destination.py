"""What an SSH destination may be, and the options every GroupX ssh runs with (D51).

The config schema and the doctor check a destination by the same rule the launcher
(``agents/drivers/remote.py``) applies, so it lives here, below both. Standard library only.
"""

from __future__ import annotations

import re

# A destination is ``[user@]host`` or an alias of the ssh config: never an option (a leading
# "-"), never a URL, a port or a space; ports and jump hosts belong in the ssh config.
DESTINATION_RE = re.compile(r"^(?:[A-Za-z0-9._][A-Za-z0-9._-]{0,63}@)?[A-Za-z0-9_][A-Za-z0-9._-]{0,252}$")
CONNECT_TIMEOUT_S = 10
KEEPALIVE_INTERVAL_S = 15
KEEPALIVE_COUNT = 3  # a silent peer is given up after about 45 s


def ssh_options(config_file: str | None, *, connect_timeout_s: int = CONNECT_TIMEOUT_S) -> list[str]:
    """The options every GroupX ssh runs with: batch mode (never a password prompt), no TTY."""
    options = ["-F", config_file] if config_file else []
    return [
        *options,
        "-T",
        "-o",
        "BatchMode=yes",
        "-o",
        f"ConnectTimeout={connect_timeout_s}",
        "-o",
        f"ServerAliveInterval={KEEPALIVE_INTERVAL_S}",
        "-o",
        f"ServerAliveCountMax={KEEPALIVE_COUNT}",
    ]
