"""Check the audit trail: its keyed hash chain, every dataset's budget recomputed from it, and
anchors kept outside the database (an anchor downloaded from the audit page, or a published
version's metadata file, whose ``audit_head`` anchors the trail at its publication)."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from releases.services.budget_audit import trail_verification

# An anchor file is small; a larger one is not an anchor (and is not read whole).
MAX_ANCHOR_BYTES = 1 << 20


def _anchor(path: Path) -> dict:
    """``{"event", "hash"}`` from an anchor file, or ``{"hash"}`` from a metadata file."""
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_ANCHOR_BYTES + 1)
        if len(raw) > MAX_ANCHOR_BYTES:
            raise ValueError("larger than an anchor")
        data = json.loads(raw)
    except (OSError, ValueError, RecursionError) as error:
        raise CommandError(f"INVALID: cannot read the anchor {path}: {error}") from None
    if not isinstance(data, dict):
        raise CommandError(f"INVALID: {path} is not an anchor or a metadata file")
    if "audit_head" in data:
        return {"hash": data["audit_head"]}
    return {"event": data.get("event"), "hash": data.get("hash")}


class Command(BaseCommand):
    help = (
        "Verify the audit trail: recompute every event's keyed hash and link, recompute every "
        "dataset's budget from the trail and compare it with the tables, and check each "
        "--anchor. Prints what is wrong and exits non-zero when anything is."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--anchor",
            type=Path,
            action="append",
            default=[],
            help="an anchor file (GET /api/v1/audit/anchor/) or a version's metadata file; "
            "repeatable",
        )

    def handle(self, *args, **options):
        result = trail_verification(anchors=[_anchor(path) for path in options["anchor"]])
        lines = []
        if result["first_broken_event"] is not None:
            lines.append(
                f"chain broken at event {result['first_broken_event']}: {result['problem']}"
            )
        for mismatch in result["budget_mismatches"]:
            lines.append(
                f"dataset {mismatch['dataset']}, {mismatch['what']}: the tables hold "
                f"{mismatch['table']}, the trail recorded {mismatch['trail']}"
            )
        lines.extend(f"anchor: {problem}" for problem in result["anchor_problems"])
        if lines:
            raise CommandError("INVALID:\n" + "\n".join(lines))
        self.stdout.write(
            f"VALID: {result['events']} events verify, every dataset's budget matches the "
            f"trail, {len(options['anchor'])} anchor(s) hold."
        )
