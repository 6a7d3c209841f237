"""Fail releases whose worker disappeared; run it from cron (e.g. every 10 minutes)."""

from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand

from releases.services.runs import release_reap_stale


class Command(BaseCommand):
    help = "Fail queued or running releases submitted longer ago than the task time limit."

    def add_arguments(self, parser):
        parser.add_argument(
            "--minutes",
            type=int,
            default=None,
            help="age in minutes (default: twice the task's hard time limit)",
        )

    def handle(self, *args, minutes, **options):
        age = (
            timedelta(minutes=minutes)
            if minutes
            else timedelta(seconds=2 * settings.CELERY_TASK_TIME_LIMIT)
        )
        reaped = release_reap_stale(older_than=age)
        self.stdout.write(f"failed {len(reaped)} stale release(s): {reaped}")
