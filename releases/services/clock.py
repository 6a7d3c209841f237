"""One clock for every machine: the database server's.

Heartbeats, claims and queue times are written by workers and read by a reaper that may run on
another machine. Compared with each machine's own clock, a worker whose clock is a minute behind
would look stale and have its release taken away while it still computes; the database's clock
is the one all of them share.
"""

from datetime import datetime

from django.db import connection
from django.utils import timezone


def database_now() -> datetime:
    """The database server's current time (PostgreSQL's ``statement_timestamp()``, not the
    transaction's start); on SQLite, a file on this machine, this machine's clock."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement_timestamp()")
            (now,) = cursor.fetchone()
        return now
    return timezone.now()
