"""The article's desiderata of privacy definitions, per definition, for the wizard's cards.

Each answer is a short phrase a curator can weigh; ``True`` means the property holds.
k-anonymity is included only as a comparison column: it is not a definition this product offers.
Every text is a phrase (wording.py) the web layer shows in the reader's language.
"""

from __future__ import annotations

from typing import Any

from privacy_engine.wording import gettext_noop

PROPERTIES = (
    (
        "post_processing",
        gettext_noop("Closed under post-processing"),
        gettext_noop("Anything computed from the release is as safe as the release."),
    ),
    (
        "self_composition",
        gettext_noop("Composes with itself"),
        gettext_noop("Several releases together still have a known, additive guarantee."),
    ),
    (
        "convexity",
        gettext_noop("Convex"),
        gettext_noop("Randomly choosing between two safe mechanisms is still safe."),
    ),
    (
        "no_failure",
        gettext_noop("Protects every outcome"),
        gettext_noop("No small probability δ in which the guarantee may fail."),
    ),
    (
        "kerckhoffs",
        gettext_noop("Safe when the method is public"),
        gettext_noop("The mechanism can be published; only the random draws are secret."),
    ),
)
WHO_IS_PROTECTED = gettext_noop("Who is protected from whom")

CARDS: dict[str, dict[str, Any]] = {
    "pure_dp": {
        "name": gettext_noop("ε-differential privacy"),
        "post_processing": True,
        "self_composition": True,
        "convexity": True,
        "no_failure": True,
        "kerckhoffs": True,
        "neighbours": gettext_noop(
            "Tables that differ by adding or removing one person's record; even whether someone "
            "is in the table is protected."
        ),
    },
    "approx_dp": {
        "name": gettext_noop("(ε, δ)-differential privacy"),
        "post_processing": True,
        "self_composition": True,
        "convexity": True,
        "no_failure": False,
        "kerckhoffs": True,
        "neighbours": gettext_noop(
            "Adding or removing one record, but the guarantee may fail with probability δ, so δ "
            "must be far below 1/n."
        ),
    },
    "blowfish": {
        "name": gettext_noop("Blowfish privacy (ε, P)"),
        "post_processing": True,
        "self_composition": True,
        "convexity": True,
        "no_failure": True,
        "kerckhoffs": True,
        "neighbours": gettext_noop(
            "Tables that differ by replacing one record with a value its policy graph connects; "
            "the number of records is public."
        ),
    },
    "k_anonymity": {
        "name": gettext_noop("k-anonymity (comparison only, not offered)"),
        "post_processing": False,
        "self_composition": False,
        "convexity": False,
        "no_failure": False,
        "kerckhoffs": False,
        "neighbours": gettext_noop(
            "None: it constrains what the output looks like, not what it reveals; two "
            "k-anonymous releases can together identify a person."
        ),
    },
}


def desiderata_table() -> dict[str, Any]:
    """Rows of properties and a column per definition, k-anonymity last."""
    kinds = ("pure_dp", "approx_dp", "blowfish", "k_anonymity")
    return {
        "columns": [CARDS[k]["name"] for k in kinds],
        "kinds": list(kinds),
        "rows": [
            {"label": label, "why": why, "values": [CARDS[k][key] for k in kinds]}
            for key, label, why in PROPERTIES
        ]
        + [
            {
                "label": WHO_IS_PROTECTED,
                "why": "",
                "values": [CARDS[k]["neighbours"] for k in kinds],
            }
        ],
    }
