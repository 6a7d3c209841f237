"""The Celery application. Tasks are Django-aware so ``delay_on_commit`` enqueues after commit.

Every worker also runs the release reaper in a daemon thread of its main process, from the moment
it is ready until it shuts down, so a release whose worker died is redelivered without cron; and,
while RAW_DATA_RETENTION_DAYS is set, the raw data retention (releases/services/raw_data.py).
"""

import os

from celery import Celery
from celery.signals import worker_ready, worker_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config", task_cls="celery.contrib.django.task:DjangoTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

_reapers = []


@worker_ready.connect
def _start_release_reaper(**kwargs) -> None:
    # Imported here: Django is set up only once the worker runs.
    from releases.services.runs import release_reaper_start

    _reapers.append(release_reaper_start())


@worker_ready.connect
def _start_raw_data_retention(**kwargs) -> None:
    from releases.services.raw_data import raw_data_retention_start

    retention = raw_data_retention_start()
    if retention is not None:
        _reapers.append(retention)


@worker_shutdown.connect
def _stop_release_reaper(**kwargs) -> None:
    while _reapers:
        _reapers.pop().stop()
