"""Run the GroupX runtime in the foreground: daphne, no autoreloader, on ``server.host:port``.

The listen is the single-runtime lease (PROTOCOL §10.6). Everything that writes — migrations,
restart recovery, sessions — runs from the reactor's start, and daphne starts its reactor only
after the listen succeeded; a process that gets ``EADDRINUSE`` returns here having written nothing
and the CLI decides whether that was an instance of the same config (reuse) or a conflict.
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Callable
from dataclasses import dataclass

from setup_wizard.config import ConfigError, GroupXConfig


@dataclass
class ServeResult:
    outcome: str  # "stopped" | "address_in_use" | "listen_failed" | "start_failed"
    message: str = ""


def serve(
    config: GroupXConfig,
    *,
    on_listening: Callable[[str], None] = lambda origin: None,
    on_ready: Callable[[str], None] = lambda origin: None,
) -> ServeResult:
    # Twisted picks its reactor at first import: daphne.server installs the asyncio reactor, so it
    # must be imported before anything else touches twisted (and before groupx_site.asgi, which
    # registers the runtime's start and shutdown with the reactor only when daphne is loaded).
    from daphne.server import Server

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "groupx_site.settings")
    from django.urls import get_resolver
    from twisted.internet import reactor

    try:  # settings refuse a storage path that is not this room's (D99): one line, not a traceback
        from groupx_site import asgi, process_runtime
    except ConfigError as error:
        return ServeResult("start_failed", str(error))
    from django.conf import settings

    from groupx_site.core import listen
    from groupx_site.port_probe import remove_run_file, write_run_file

    # Import every view before binding, so the first health probe (a racing `groupx start`, 500 ms
    # budget) is answered without waiting for the URLconf and the API schemas to load.
    get_resolver().url_patterns  # noqa: B018
    process_runtime.migrate_before_start()
    result = ServeResult("stopped")

    class ForegroundServer(Server):
        listen_failure: BaseException | None = None

        def listen_success(self, port) -> None:
            super().listen_success(port)
            host = port.getHost()
            listen.set_bound(host.host, host.port)
            write_run_file(settings.GROUPX_CONFIG_PATH, host.host, host.port)  # where `groupx stop` finds it
            on_listening(listen.origin())

        def listen_error(self, failure) -> None:
            # daphne would log and stop; the CLI reports it (and may turn EADDRINUSE into a reuse).
            self.listen_failure = failure.value
            self.stop()

    server = ForegroundServer(
        application=asgi.application,
        endpoints=[f"tcp:port={config.server.port}:interface={config.server.host}"],
        signal_handlers=True,  # Ctrl+C / SIGTERM: the reactor's shutdown runs the graceful close
        verbosity=0,
    )

    def watch_start() -> None:
        async def wait_ready() -> None:
            try:
                await process_runtime.ensure_started()
            except Exception as error:
                result.outcome, result.message = "start_failed", f"the runtime failed to start: {error}"
                reactor.stop()
            else:
                on_ready(listen.origin())

        asyncio.ensure_future(wait_ready())

    reactor.callWhenRunning(watch_start)
    try:
        server.run()
    finally:
        remove_run_file(settings.GROUPX_CONFIG_PATH)
    cancel_leftover_tasks(reactor._asyncioEventloop)
    failure = server.listen_failure
    if failure is not None:
        socket_error = getattr(failure, "socketError", None)
        if getattr(socket_error, "errno", None) == errno.EADDRINUSE:
            return ServeResult("address_in_use", str(socket_error))
        return ServeResult("listen_failed", str(failure))
    return result


def cancel_leftover_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """After Ctrl+C the reactor stops with tasks still suspended; finish them before the interpreter
    exits, whose garbage collector has crashed CPython 3.11 on suspended coroutines (SIGSEGV)."""
    leftovers = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in leftovers:
        task.cancel()
    if leftovers and not loop.is_closed():
        loop.run_until_complete(asyncio.wait(leftovers, timeout=2))
