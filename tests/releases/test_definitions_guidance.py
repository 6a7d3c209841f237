"""Guidance that needs no data: the accuracy-first solver through the API."""

import math

import pytest

from privacy_engine import preview


def test_accuracy_first_solver_returns_the_epsilon_whose_preview_meets_the_target(
    curator_client, dataset
):
    # given a curator who can live with ±10 on a count, 95% of the time
    body = {
        "definition": {"kind": "pure_dp", "epsilon": 1},
        "query": {"kind": "count"},
        "ci95_halfwidth": 10,
    }

    # when
    response = curator_client.post(f"/api/v1/datasets/{dataset.pk}/accuracy/", body, format="json")

    # then the ε it costs gives at most ±10, and 0.2% less ε would not
    assert response.status_code == 200
    epsilon = response.json()["epsilon"]
    at = preview(
        schema=dataset.schema,
        definition={"kind": "pure_dp", "epsilon": epsilon},
        queries=[{"kind": "count"}],
    )[0]
    below = preview(
        schema=dataset.schema,
        definition={"kind": "pure_dp", "epsilon": epsilon * 0.998},
        queries=[{"kind": "count"}],
    )[0]
    assert at["ci95_halfwidth"] <= 10
    assert below["ci95_halfwidth"] > 10


def test_accuracy_first_solver_for_a_sum_matches_the_laplace_formula(curator_client, dataset):
    # given ±500 on the sum of age (bounds 0–100): b·ln 20 = 500 → ε = 100·ln 20 / 500
    body = {"query": {"kind": "sum", "column": "age"}, "ci95_halfwidth": 500}

    # when
    response = curator_client.post(f"/api/v1/datasets/{dataset.pk}/accuracy/", body, format="json")

    # then
    assert response.json()["epsilon"] == pytest.approx(100 * math.log(20) / 500, rel=2e-3)


def test_accuracy_first_solver_refuses_an_impossible_target_naming_the_field(
    curator_client, dataset
):
    # when ±0.001 on a sum cannot be reached with ε ≤ 20
    response = curator_client.post(
        f"/api/v1/datasets/{dataset.pk}/accuracy/",
        {"query": {"kind": "sum", "column": "age"}, "ci95_halfwidth": 0.001},
        format="json",
    )

    # then
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["ci95_halfwidth"]


def test_starting_point_suggests_epsilon_with_reasons(anonymous_client):
    # when severe harm and a few planned releases
    response = anonymous_client.get(
        "/api/v1/guidance/starting-point/?harm=severe&releases=few&declared_size=10000"
    )

    # then half of the severe-harm total, δ = 1/n², and one reason per factor
    assert response.status_code == 200
    body = response.json()
    assert body["epsilon"] == 0.125
    assert body["delta"] == 1e-8
    assert len(body["reasons"]) == 3


def test_starting_point_refuses_unknown_answers_naming_the_field(anonymous_client):
    # when
    response = anonymous_client.get("/api/v1/guidance/starting-point/?harm=awful&releases=few")

    # then
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["harm"]


def test_simulated_preview_uses_the_declared_shape_not_the_data(curator_client, dataset):
    # given a draft with a histogram of sex (the real table has F, M and an unknown X)
    draft = curator_client.post(
        "/api/v1/releases/",
        {
            "dataset": dataset.pk,
            "title": "Sexes",
            "definition": {"kind": "pure_dp", "epsilon": 1},
            "queries": [{"kind": "count"}, {"kind": "histogram", "column": "sex"}],
        },
        format="json",
    ).json()

    # when
    response = curator_client.get(f"/api/v1/releases/{draft['id']}/simulated-preview/")

    # then the simulated table has the declared size, spread evenly over the declared categories
    assert response.status_code == 200
    count, histogram = response.json()["results"]
    assert count["simulated"] == dataset.declared_size
    assert histogram["simulated"] == {"F": 3, "M": 2}
    assert set(histogram["noisy"]) == {"F", "M"}


def test_translate_gives_group_privacy_with_delta(anonymous_client):
    # when a group of 3 under (0.1, 10⁻⁶)
    body = anonymous_client.get("/api/v1/translate/?epsilon=0.1&group_size=3&delta=1e-6").json()

    # then (c·ε, c·e^{(c−1)ε}·δ)
    assert body["group_epsilon"] == pytest.approx(0.3)
    assert body["group_delta"] == pytest.approx(3 * math.exp(0.2) * 1e-6)
    # and, for the page's script, as the pages write them
    assert (body["group_epsilon_text"], body["group_delta_text"]) == ("0.3", "3.7 × 10⁻⁶")


def test_translate_refuses_a_fractional_group_naming_the_field(anonymous_client):
    # when
    response = anonymous_client.get("/api/v1/translate/?epsilon=0.1&group_size=2.5")

    # then
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["group_size"]
