"""Recover releases whose worker or message was lost. Every worker already does this at start and
then every half ``RELEASE_STALE_SECONDS``; run it from cron too if workers may all be down."""

from datetime import timedelta

from django.core.management.base import BaseCommand

from releases.services.runs import release_reap_stale


class Command(BaseCommand):
    help = (
        "Queue again (with a new message) running releases whose heartbeat is older than "
        "RELEASE_STALE_SECONDS, failing those whose worker stopped RELEASE_MAX_DELIVERIES times, "
        "and send a new message for queued releases no worker claimed for --minutes."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--minutes",
            type=int,
            default=None,
            help="how long a queued release may wait unclaimed before its message counts as "
            "lost (default: twice the task's hard time limit)",
        )

    def handle(self, *args, minutes, **options):
        reaped = release_reap_stale(older_than=timedelta(minutes=minutes) if minutes else None)
        for outcome in ("redelivered", "failed"):
            ids = [r.release_id for r in reaped if r.outcome == outcome]
            self.stdout.write(f"{outcome} {len(ids)} stale release(s): {ids}")
