"""Apply the raw data retention period now. Every Celery worker already does this hourly while
RAW_DATA_RETENTION_DAYS is set; run it from cron too if workers may all be down."""

from django.conf import settings
from django.core.management.base import BaseCommand

from releases.services.raw_data import raw_data_retention_apply, retention_reason


class Command(BaseCommand):
    help = (
        "Delete the raw data (uploaded file and converted table) of every dataset uploaded more "
        "than RAW_DATA_RETENTION_DAYS days ago, as the system, with the reason "
        '"retention: N days"; releases, ledger and audit trail stay. Datasets converting or with '
        "a release queued or running are skipped and taken on a later run. Does nothing while "
        "RAW_DATA_RETENTION_DAYS is 0."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="list the datasets whose raw data would be deleted, and delete nothing",
        )

    def handle(self, *args, dry_run: bool, **options):
        days = settings.RAW_DATA_RETENTION_DAYS
        if days <= 0:
            self.stdout.write("RAW_DATA_RETENTION_DAYS is 0: raw data is kept until deleted.")
            return
        outcome = raw_data_retention_apply(retention_days=days, dry_run=dry_run)
        verb = "would delete" if dry_run else "deleted"
        self.stdout.write(
            f"{verb} the raw data of {len(outcome.deleted)} dataset(s) "
            f"({retention_reason(days)}): {outcome.deleted}"
        )
        for dataset_id, why in outcome.skipped:
            self.stdout.write(f"skipped dataset {dataset_id}: {why}")
