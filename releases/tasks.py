"""Celery tasks: take an id, call one service. Idempotency lives in the service."""

import os
import socket

from celery import shared_task
from django.db import InterfaceError, OperationalError

from releases.services.datasets import dataset_convert
from releases.services.runs import release_run

# Only errors that may pass (a lost connection, a locked database) are retried; the services turn
# every other error into a failure with a reason.
TRANSIENT = (OperationalError, InterfaceError)


@shared_task(
    acks_late=True,
    autoretry_for=TRANSIENT,
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=5,
)
def release_run_task(release_id: int) -> None:
    release_run(release_id=release_id, worker=f"{socket.gethostname()}:{os.getpid()}")


@shared_task(
    acks_late=True,
    # A worker killed mid-conversion (out of memory) must not get its message back at once, over
    # and over: the reaper sends it again once the heartbeat is stale, counting the attempt.
    reject_on_worker_lost=False,
    autoretry_for=TRANSIENT,
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=5,
)
def dataset_convert_task(dataset_id: int) -> None:
    """Sent with its own time limits (DATASET_CONVERT_TIME_LIMIT): a large upload converts for
    longer than a release computes."""
    dataset_convert(dataset_id=dataset_id)
