"""The risk card on the privacy step, the confirm page, the public version page and the release
card: the engine's numbers for this release and for every release of the table together."""

import re

import pytest

from tests.releases.test_pages import make_draft, page_of, publish


def risk_cells(page: str, css_class: str) -> list[str]:
    card = page[page.index('id="risk-card"') :]
    card = card[: card.index("</section>")]
    return re.findall(rf'<td class="{css_class}">([^<]*)</td>', card)


@pytest.fixture
def published(curator, dataset, django_capture_on_commit_callbacks):
    return publish(django_capture_on_commit_callbacks, curator, dataset)


@pytest.fixture
def two_published(curator, dataset, django_capture_on_commit_callbacks):
    first = publish(django_capture_on_commit_callbacks, curator, dataset, epsilon=0.5)
    second = publish(
        django_capture_on_commit_callbacks, curator, dataset, title="Again", epsilon=0.3
    )
    return first, second


def test_the_version_page_shows_this_release_and_every_published_release_of_the_table(
    client, curator, dataset, two_published
):
    first, _ = two_published
    # A submitted release not yet published is not something the public can have.
    from releases.services.releases import release_submit

    release_submit(release=make_draft(curator, dataset, title="Queued", epsilon=0.1), user=curator)

    page = page_of(client.get(f"/catalog/{first.series.slug}/v1/"))

    # e^0.5/(1+e^0.5) = 62.246% (an upper bound: rounded up); e^0.8/(1+e^0.8) = 68.997% for
    # 0.5 + 0.3 together.
    assert risk_cells(page, "truth") == ["62.3%", "69.0%"]
    # A family of three: e^1.5/(1+e^1.5) = 81.8%; e^2.4/(1+e^2.4) = 91.7%.
    assert [cell.split(" ")[0] for cell in risk_cells(page, "family")] == ["81.8%", "91.7%"]
    assert "All releases of this table together (ε = 0.8)" in page


def test_mechanism_sensitivity_and_noise_scale_sit_behind_technical_details(client, published):
    page = page_of(client.get(f"/catalog/{published.series.slug}/v1/"))

    details = re.findall(
        r'<details class="technical"><summary>Technical details</summary>(.*?)</details>',
        page,
        re.DOTALL,
    )
    assert len(details) == len(published.queries)
    assert all("sensitivity" in block and "noise scale" in block for block in details)
    main = page[page.index("<main") : page.index("</main>")]  # the footer names them in general
    outside = re.sub(r'<details class="technical">.*?</details>', "", main, flags=re.DOTALL)
    assert "noise scale" not in outside
    assert "sensitivity" not in outside


def test_the_release_card_shows_the_risk_card(client, two_published):
    first, _ = two_published

    page = page_of(client.get(f"/catalog/{first.series.slug}/v1/card/"))

    assert risk_cells(page, "truth") == ["62.3%", "69.0%"]


def test_the_confirm_page_adds_this_release_to_what_the_table_already_spent(
    client, curator, dataset, django_capture_on_commit_callbacks
):
    publish(django_capture_on_commit_callbacks, curator, dataset, epsilon=0.5)
    draft = make_draft(curator, dataset, title="Next", epsilon=0.3)
    client.force_login(curator)

    page = page_of(client.get(f"/releases/{draft.pk}/confirm/"))

    # e^0.3/(1+e^0.3) = 57.44% alone, rounded up; 69.0% with the 0.5 already spent.
    assert risk_cells(page, "truth") == ["57.5%", "69.0%"]


def test_the_privacy_step_shows_the_card_for_the_default_epsilon(client, curator, dataset):
    client.force_login(curator)

    page = page_of(client.get(f"/datasets/{dataset.pk}/releases/new/"))

    assert 'id="risk-card"' in page
    assert len(risk_cells(page, "truth")) == 2


def test_the_live_card_follows_the_definition_being_edited(client, curator, dataset):
    client.force_login(curator)
    url = f"/datasets/{dataset.pk}/risk-card/"

    approx = page_of(client.post(url, {"definition_kind": "approx_dp", "epsilon": "1"}))
    partition = page_of(
        client.post(
            url,
            {
                "definition_kind": "blowfish",
                "epsilon": "1",
                "policy_graph": "partition_groups",
                "policy_column": "sex",
                "policy_groups": "F | M",
            },
        )
    )
    unfinished = page_of(client.post(url, {"definition_kind": "pure_dp", "epsilon": "-1"}))

    # The declared size is 5: δ = min(10⁻⁶, 1/25) = 10⁻⁶.
    assert risk_cells(approx, "failure")[0] == "1 in 1,000,000"
    assert risk_cells(approx, "truth")[0] == "73.2%"  # 73.106%, rounded up
    assert "Two values in different groups or ranges: <strong>not protected</strong>" in partition
    assert "Which group each person is in (sex)" in partition
    assert "Choose a definition and ε to see what they protect." in unfinished


def test_the_live_card_is_for_the_dataset_owner_only(client, other_curator, dataset):
    url = f"/datasets/{dataset.pk}/risk-card/"

    assert client.post(url, {"epsilon": "1"}).status_code == 302  # to the login page
    client.force_login(other_curator)
    assert client.post(url, {"epsilon": "1"}).status_code == 404
    assert client.get(url).status_code == 405


def test_intervals_are_said_to_be_per_value_and_the_true_value_after_the_rules(client, published):
    page = page_of(client.get(f"/catalog/{published.series.slug}/v1/"))
    text = re.sub(r"\s+", " ", page)

    assert "Each 95% interval is for its own value alone (one number, one bar, one cell)" in text
    assert "“The true value” means the value computed under the published rules" in text
    # Each statistic's own rules are in sight, not only behind the technical details.
    main = text[text.index("<main") : text.index("</main>")]
    outside = re.sub(r'<details class="technical">.*?</details>', "", main)
    assert outside.count("computed after these published rules: ") >= 2
    assert "clamped" in outside


def test_the_preview_keeps_mechanism_sensitivity_and_noise_scale_in_technical_details(
    client, curator, dataset
):
    draft = make_draft(curator, dataset)
    client.force_login(curator)

    page = page_of(client.get(f"/releases/{draft.pk}/preview/"))

    technical = page[page.index('<details class="technical" id="preview-technical">') :]
    technical = technical[: technical.index("</details>")]
    main_table = page[page.index('<table id="preview">') :]
    main_table = main_table[: main_table.index("</table>")]
    assert '<th scope="col">Noise scale</th>' in technical
    assert technical.count("<tr><td>") == len(draft.queries)
    assert "Noise scale" not in main_table
    assert "Mechanism" not in main_table


def test_a_published_definition_the_engine_now_refuses_still_has_its_pages(
    client, curator, dataset, django_capture_on_commit_callbacks, monkeypatch
):
    # A version published before θ was capped: its stored definition no longer parses.
    from privacy_engine import definitions
    from releases.services.releases import release_draft_create, release_submit

    monkeypatch.setattr(definitions, "MAX_POLICY_DISTANCE", float("inf"))
    draft = release_draft_create(
        user=curator,
        dataset=dataset,
        title="Before the cap",
        definition={
            "kind": "blowfish",
            "epsilon": 0.5,
            "policy": {"graph": "distance_threshold", "column": "age", "theta": 1e16},
        },
        queries=[{"kind": "count"}, {"kind": "sum", "column": "age"}],
    )
    with django_capture_on_commit_callbacks(execute=True):
        release_submit(release=draft, user=curator)
    draft.refresh_from_db()
    assert draft.status == "published", draft.failure_reason
    monkeypatch.undo()

    version = client.get(f"/catalog/{draft.series.slug}/v1/")
    card = client.get(f"/catalog/{draft.series.slug}/v1/card/")

    assert version.status_code == card.status_code == 200
    assert risk_cells(page_of(version), "truth")[0] == "62.3%"


def test_under_blowfish_the_card_says_its_numbers_are_about_protected_pairs(
    client, curator, dataset
):
    client.force_login(curator)

    page = page_of(
        client.post(
            f"/datasets/{dataset.pk}/risk-card/",
            {
                "definition_kind": "blowfish",
                "epsilon": "1",
                "policy_graph": "partition_groups",
                "policy_column": "sex",
                "policy_groups": "F | M",
            },
        )
    )

    assert 'id="risk-blowfish-scope"' in page


def test_the_card_rounds_bounds_towards_more_risk():
    from releases.templatetags.risk import one_in, percent

    assert percent(0.622459) == "62.3%"  # an upper bound never reads lower
    assert percent(0.5) == "50.0%"
    assert percent(0.99996) == "above 99.9%"
    assert one_in(1.2755e-9) == "1 in 784,000,000"  # 1 in 784,006,272: N rounded down
    assert one_in(8.15e-6) == "1 in 122,000"
    assert one_in(0.6) == "60.0%"
