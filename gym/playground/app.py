"""The playground's server: checks of the address before any work, the Bokeh application
(a fresh :class:`~gym.playground.state.Session` and page per browser tab), and serving it
on loopback until interrupted. BokehJS is served by this server: the page needs no
internet."""

from __future__ import annotations

import errno
import signal
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gym.core.errors import GymError, Problem
from gym.core.limits import DEFAULT_MAX_URLS
from gym.models import Design, Scenario
from gym.playground.links import LINK, Link, Scenarios, parse
from gym.playground.page import Page
from gym.playground.state import Session
from gym.system.graph import GraphDesign

if TYPE_CHECKING:
    from bokeh.document import Document


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (for tests and ``--port 0``)."""
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def check_port(host: str, port: int) -> None:
    """Refuse, before any work, an address the server could not listen on: the port when
    it is taken or not allowed, the host otherwise."""
    if not host.strip():
        raise GymError.single(None, "--host", "an address is needed, e.g. 127.0.0.1")
    if ":" in host:  # Bokeh's check of the page's origin takes no IPv6 address
        raise GymError.single(
            None,
            "--host",
            f"{host}: an IPv6 address; the playground listens on IPv4 addresses and host "
            "names (127.0.0.1, 0.0.0.0 for every interface, localhost)",
        )
    try:
        with socket.socket(socket.AF_INET) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
    except (OSError, UnicodeError) as exc:
        option = "--port" if getattr(exc, "errno", None) in _PORT_ERRORS else "--host"
        reason = getattr(exc, "strerror", None) or str(exc)
        raise GymError.single(None, option, f"cannot listen on {host}:{port}: {reason}") from None


#: Why a bind fails because of the port (taken, or reserved for root) and not the host.
_PORT_ERRORS = (errno.EADDRINUSE, errno.EACCES)


def app(
    design: Design | GraphDesign,
    scenario: Scenario,
    design_file: str,
    seed: int = 0,
    max_urls: int = DEFAULT_MAX_URLS,
    scenario_file: str = "scenario",
) -> Any:
    """The Bokeh application: every document (browser tab) gets a fresh session, from
    the server's design, scenario and seed, or a share link's (its query)."""
    from bokeh.application import Application
    from bokeh.application.handlers.function import FunctionHandler

    def make(doc: Document) -> None:
        session = Session(design, scenario, design_file, seed, max_urls, scenario_file)
        scenarios = Scenarios.around(scenario_file, scenario)
        request = doc.session_context.request if doc.session_context else None
        arguments = getattr(request, "arguments", None) or {}
        problems = follow(session, scenarios, parse(arguments))
        Page(doc, session, scenarios, problems)

    return Application(FunctionHandler(make))


def follow(session: Session, scenarios: Scenarios, link: Link) -> list[Problem]:
    """Bring ``session`` to what a share link asks for: its scenario, design and seed,
    each checked as the page checks a change. What does not hold is left as the server
    started it, and said (the problems returned)."""
    problems = list(link.problems)
    scenario = None
    if link.scenario is not None and link.scenario != session.scenario_file:
        try:
            scenario = (scenarios.get(link.scenario), link.scenario)
        except GymError as err:
            problems += err.problems
    opened = False
    if link.design is not None:
        try:
            session.open(link.design, LINK, scenario)  # the two together: a graph's
            opened = True
        except GymError as err:
            problems += err.problems
    if scenario is not None and not opened:
        try:
            session.use_scenario(*scenario)
        except GymError as err:
            problems += err.problems
    if link.seed is not None:
        try:
            session.use_seed(link.seed)
        except GymError as err:
            problems += [Problem(LINK, p.field, p.message) for p in err.problems]
    return problems


def serve(
    design: Design | GraphDesign,
    scenario: Scenario,
    design_file: str,
    *,
    host: str = "127.0.0.1",
    port: int = 5006,
    seed: int = 0,
    max_urls: int = DEFAULT_MAX_URLS,
    ready: Callable[[str], None] | None = None,
    scenario_file: str = "scenario",
) -> None:
    """Serve the playground until interrupted; ``ready`` gets the address once the server
    listens."""
    from bokeh.server.server import Server

    origins = [f"{host}:{port}", f"localhost:{port}", f"127.0.0.1:{port}"]
    server = Server(
        {"/": app(design, scenario, design_file, seed, max_urls, scenario_file)},
        address=host,
        port=port,
        allow_websocket_origin=origins,
        num_procs=1,
    )
    server.start()
    if ready is not None:
        ready(f"http://{host}:{port}/")
    # Ctrl-C and SIGTERM stop the loop from within it (a KeyboardInterrupt raised where the
    # signal lands can fall in a callback, a weak reference's, that swallows it: the server
    # went on), then end the command as an interrupt does everywhere (exit 130).
    stopped: list[int] = []
    loop = server.io_loop.asyncio_loop
    # The handlers in force (the command's), put back once the loop has stopped; none to
    # replace outside the main thread, or where the loop cannot take signals (Windows).
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def stop(signum: int) -> None:
        stopped.append(signum)
        server.io_loop.stop()

    for s in list(previous):
        try:
            loop.add_signal_handler(s, stop, s)
        except NotImplementedError:
            del previous[s]
    try:
        server.io_loop.start()
    finally:
        for s, handler in previous.items():
            loop.remove_signal_handler(s)
            if handler is not None:  # (None: not set from Python, nothing to put back)
                signal.signal(s, handler)
        server.stop()
    if stopped:
        raise KeyboardInterrupt
