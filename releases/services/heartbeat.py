"""Daemon threads a worker runs beside its tasks: the heartbeat of a held release, and the reaper.

Each thread talks to the database through its own connection (Django's connections are per
thread) and closes it when it stops. An error is logged by type only (messages from drivers can
quote values) and the action is tried again on the next tick: one missed beat is harmless as long
as a later one lands before the release counts as stale.
"""

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connections

from releases.models import Release
from releases.services.clock import database_now

logger = logging.getLogger(__name__)


class Ticker(threading.Thread):
    """Call ``action`` every ``interval`` seconds until stopped, or until it returns False."""

    def __init__(
        self,
        *,
        name: str,
        interval: float,
        action: Callable[[], bool | None],
        run_first: bool = False,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.interval = interval
        self.action = action
        self.run_first = run_first
        self._stopped = threading.Event()

    def run(self) -> None:
        try:
            if self.run_first and self._tick() is False:
                return
            while not self._stopped.wait(self.interval):
                if self._tick() is False:
                    return
        finally:
            connections.close_all()

    def _tick(self) -> bool | None:
        # This thread's connection outlives any request or task: drop it if the server closed it
        # (a restart, a failover, an idle timeout), so the action reconnects instead of failing
        # on every tick from then on.
        close_old_connections()
        try:
            return self.action()
        except DatabaseError as error:
            connections.close_all()
            logger.warning(
                "%s: %s, reconnecting in %ss", self.name, type(error).__name__, self.interval
            )
            return None
        except Exception as error:
            logger.warning(
                "%s: %s, retrying in %ss", self.name, type(error).__name__, self.interval
            )
            return None

    def stop(self, *, wait: float = 1.0) -> None:
        """Ask the thread to stop; wait briefly. A thread still inside a database call finishes it
        on its own: every write it makes is conditional, so a late one changes nothing."""
        self._stopped.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(wait)


@contextmanager
def heartbeat(*, name: str, beat: Callable[[], bool]) -> Iterator[None]:
    """Call ``beat`` every ``RELEASE_HEARTBEAT_SECONDS`` in a daemon thread while the body runs,
    until it returns False."""
    ticker = Ticker(name=name, interval=float(settings.RELEASE_HEARTBEAT_SECONDS), action=beat)
    ticker.start()
    try:
        yield
    finally:
        ticker.stop()


@contextmanager
def release_heartbeat(*, release_id: int, claim_token: str) -> Iterator[None]:
    """Refresh ``heartbeat_at`` every ``RELEASE_HEARTBEAT_SECONDS`` while the body runs, only
    while this delivery still holds the release (running, same claim token). The reaper
    redelivers a running release whose heartbeat is older than ``RELEASE_STALE_SECONDS``."""

    def beat() -> bool:
        held = Release.objects.filter(
            pk=release_id, claim_token=claim_token, status=Release.Status.RUNNING
        ).update(heartbeat_at=database_now())
        if not held:
            logger.warning("release %s is no longer held by this delivery", release_id)
        return bool(held)

    with heartbeat(name=f"release-{release_id}-heartbeat", beat=beat):
        yield
