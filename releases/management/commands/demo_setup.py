"""Demo accounts and a generated demo table, for `make run`. Nothing here is real data."""

import csv
import io

import numpy as np
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import BaseCommand

from accounts.roles import Role
from accounts.services import user_create_or_reset
from releases.models import Dataset
from releases.services.datasets import dataset_create, dataset_schema_update

DEMO_DATASET = "Demo: clinic visits (generated)"
DEMO_SCHEMA = {
    "columns": {
        "age": {"kind": "numeric", "lower": 0, "upper": 100},
        "sex": {"kind": "categorical", "categories": ["F", "M"], "other": "other"},
        "diagnosis": {
            "kind": "categorical",
            "categories": ["healthy", "flu", "cold", "cancer", "stroke"],
            "other": "other",
        },
        "visits": {"kind": "numeric", "lower": 0, "upper": 20},
    },
    "declared_size": 2000,
}


def demo_table_csv(rows: int = 2000, seed: int = 7) -> bytes:
    """A synthetic clinic table; a fixed seed keeps the demo the same on every machine."""
    generator = np.random.default_rng(seed)
    diagnoses = ["healthy", "flu", "cold", "cancer", "stroke"]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["patient_id", "age", "sex", "diagnosis", "visits"])
    for number in range(rows):
        writer.writerow(
            [
                f"P{number:05d}",
                int(np.clip(generator.normal(45, 18), 0, 99)),
                "F" if generator.random() < 0.52 else "M",
                diagnoses[generator.choice(5, p=[0.55, 0.2, 0.15, 0.06, 0.04])],
                int(generator.poisson(3)),
            ]
        )
    return out.getvalue().encode()


class Command(BaseCommand):
    help = "Create or reset the demo curator and compliance officer and load the demo table."

    def handle(self, *args, **options):
        curator, curator_password = user_create_or_reset(username="curator", role=Role.CURATOR)
        _, compliance_password = user_create_or_reset(username="compliance", role=Role.COMPLIANCE)
        if not Dataset.objects.filter(owner=curator, name=DEMO_DATASET).exists():
            upload = SimpleUploadedFile("clinic.csv", demo_table_csv(), "text/csv")
            dataset = dataset_create(
                owner=curator,
                name=DEMO_DATASET,
                upload=upload,
                budget_epsilon="2.0",
                budget_delta="0.00001",
                declared_size=2000,
            )
            dataset_schema_update(dataset=dataset, user=curator, schema=DEMO_SCHEMA)
        self.stdout.write(
            "\nDemo accounts (passwords are new on every start and shown only here):\n"
            f"  curator     / {curator_password}\n"
            f"  compliance  / {compliance_password}\n"
        )
