"""What the public gets of a large range histogram: a version API answer and a page of bounded
size (per-bin values left to the files, the chart's bars summing neighbouring bins), range
questions rate-limited per client address, and a bad range request answered on the statistic
asked for only."""

import json
import re

import pytest

from releases.models import Release
from releases.public_cache import public_cache_reset
from releases.views import RANGE_CHART_BARS
from tests.conftest import RELEASE_FILE_FORMATS, publish_through_api

RANGES = {"kind": "range_histogram", "column": "age", "bins": 1000}


def publish(client, dataset_id: int, capture, *queries: dict) -> Release:
    body = {
        "dataset": dataset_id,
        "title": "Ages",
        "definition": {"kind": "pure_dp", "epsilon": 0.5},
        "queries": list(queries),
    }
    return publish_through_api(client, capture, body)


@pytest.fixture
def published(curator_client, dataset, django_capture_on_commit_callbacks) -> Release:
    return publish(
        curator_client,
        dataset.pk,
        django_capture_on_commit_callbacks,
        {"kind": "count"},
        RANGES,
        {**RANGES, "bins": 50},
    )


@pytest.fixture
def huge(curator_client, dataset, django_capture_on_commit_callbacks) -> Release:
    return publish(
        curator_client,
        dataset.pk,
        django_capture_on_commit_callbacks,
        {**RANGES, "bins": 65_536},
    )


def page_charts(html: str) -> list[dict]:
    found = re.search(r'<script id="chart-data" type="application/json">(.*?)</script>', html)
    assert found is not None
    return json.loads(found.group(1))


def test_the_version_api_leaves_the_bins_of_a_large_histogram_to_the_files(anonymous_client, huge):
    # when
    response = anonymous_client.get(f"/api/v1/catalog/{huge.series.slug}/versions/1/")

    # then the answer is small and says where the bins are
    assert response.status_code == 200
    assert len(response.content) < 20_000, len(response.content)
    (statistic,) = response.json()["statistics"]
    assert statistic["values_in_files"] is True
    assert statistic["value"] is None
    assert statistic["ci95"] is None
    assert "cells" not in statistic
    assert statistic["tree"]["bins"] == 65_536
    assert {f["format"] for f in response.json()["files"]} == RELEASE_FILE_FORMATS
    # and the range URL it names answers a range
    assert statistic["range_url"].startswith("http://testserver/api/v1/catalog/")
    answer = anonymous_client.get(statistic["range_url"] + "?from=10&to=20")
    assert answer.status_code == 200
    assert answer.json()["bins"] > 1000


def test_the_version_api_lists_bins_up_to_the_setting(anonymous_client, published, settings):
    base = f"/api/v1/catalog/{published.series.slug}/versions/1/"

    # given the default (1,024): both histograms list their bins
    _, thousand, fifty = anonymous_client.get(base).json()["statistics"]
    assert (thousand["values_in_files"], len(thousand["cells"])) == (False, 1000)
    assert (fifty["values_in_files"], len(fifty["value"])) == (False, 50)

    # when the setting is below 1,000 bins (and the cached answer forgotten)
    settings.CATALOG_MAX_INLINE_BINS = 999
    public_cache_reset()
    _, thousand, fifty = anonymous_client.get(base).json()["statistics"]

    # then only the larger one leaves its bins to the files
    assert (thousand["values_in_files"], thousand["value"]) == (True, None)
    assert (fifty["values_in_files"], len(fifty["value"])) == (False, 50)


def test_the_page_of_a_large_histogram_is_small_and_its_bars_sum_the_bins(anonymous_client, huge):
    from releases.selectors import release_answer_statistics

    # when
    response = anonymous_client.get(f"/catalog/{huge.series.slug}/v1/")

    # then
    assert response.status_code == 200
    assert len(response.content) < 200_000, len(response.content)
    html = response.content.decode()
    assert "Each bar of the chart sums 128 neighbouring bins of the 65,536" in html
    (chart,) = page_charts(html)
    assert len(chart["values"]) == RANGE_CHART_BARS
    (statistic,) = release_answer_statistics(release=huge)
    bins = [statistic["value"][cell] for cell in statistic["cells"]]
    assert chart["values"][3] == pytest.approx(max(0.0, sum(bins[384:512])))
    assert chart["width"][0] == pytest.approx(128 * 100 / 65_536)
    assert chart["x"][0] == pytest.approx(64 * 100 / 65_536)


def test_a_histogram_of_few_bins_draws_every_bin(anonymous_client, published):
    html = anonymous_client.get(f"/catalog/{published.series.slug}/v1/").content.decode()

    thousand, fifty = page_charts(html)

    assert len(thousand["values"]) == 500
    assert html.count("neighbouring bins") == 1  # said of the 1,000 bins only
    assert "sums 2 neighbouring bins of the 1,000" in html
    assert (len(fifty["values"]), len(fifty["plus"])) == (50, 50)  # error bars up to 200 bins


def test_range_questions_are_rate_limited_per_address(anonymous_client, published, settings):
    # given three ranges a minute
    settings.RANGE_QUERY_RATE = "3/min"
    api = f"/api/v1/catalog/{published.series.slug}/versions/1/statistics/1/range/?from=1&to="
    page = f"/catalog/{published.series.slug}/v1/?statistic=1&from=1&to="

    # when one address asks four new ranges (the page's count with the API's; a range asked
    # again is answered from the public cache and costs nothing)
    answers = [anonymous_client.get(api + to).status_code for to in ("9", "9", "10")]
    answers.append(anonymous_client.get(page + "11").status_code)
    refused = anonymous_client.get(api + "12")
    refused_page = anonymous_client.get(page + "13")

    # then the fourth and the fifth are refused, saying when to come back
    assert answers == [200, 200, 200, 200]
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert "throttled" in refused.json()["detail"]
    assert refused_page.status_code == 429
    assert "Too many ranges asked from your address" in refused_page.content.decode()
    assert "Records from" not in refused_page.content.decode()
    # and another address is still answered, and the page without a range is not limited
    assert anonymous_client.get(api + "12", REMOTE_ADDR="192.0.2.7").status_code == 200
    assert anonymous_client.get(f"/catalog/{published.series.slug}/v1/").status_code == 200


def test_a_bad_range_is_said_on_the_statistic_asked_for_only(anonymous_client, published):
    page = f"/catalog/{published.series.slug}/v1/"

    # when the second range histogram is asked a bad range
    html = anonymous_client.get(page + "?statistic=2&from=30&to=10").content.decode()

    # then the error is shown once, in that statistic's section
    assert html.count("To must be above from.") == 1
    section = html.split('id="statistic-2"')[1]
    assert "To must be above from." in section


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("?statistic=x&from=1&to=9", "Statistic must be a statistic&#x27;s number."),
        ("?statistic=0&from=1&to=9", "Statistic 0 is not a histogram for any range."),
        ("?statistic=7&from=1&to=9", "Statistic 7 is not a histogram for any range."),
    ],
)
def test_a_range_request_for_no_range_histogram_is_said_once(
    anonymous_client, published, query, message
):
    response = anonymous_client.get(f"/catalog/{published.series.slug}/v1/" + query)

    assert response.status_code == 200
    html = response.content.decode()
    assert html.count(message) == 1, html
    assert "Records from" not in html


def test_a_header_naming_another_address_neither_escapes_the_limit_nor_locks_others_out(
    anonymous_client, published, settings
):
    # given two ranges a minute, and no trusted proxy (the default)
    settings.RANGE_QUERY_RATE = "2/min"
    api = f"/api/v1/catalog/{published.series.slug}/versions/1/statistics/1/range/?from=1&to="

    # when one address asks five ranges, each claiming another address by X-Forwarded-For
    answers = [
        anonymous_client.get(api + str(9 + i), HTTP_X_FORWARDED_FOR=f"10.0.0.{i}").status_code
        for i in range(5)
    ]

    # then its own address is counted: the third is refused
    assert answers == [200, 200, 429, 429, 429]
    # and the address it named is not locked out
    assert anonymous_client.get(api + "30", REMOTE_ADDR="10.0.0.3").status_code == 200


def test_behind_a_trusted_proxy_the_address_it_saw_is_counted(
    anonymous_client, published, settings
):
    # given one proxy in front, which appends the address it saw to X-Forwarded-For
    settings.RANGE_QUERY_RATE = "1/min"
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    api = f"/api/v1/catalog/{published.series.slug}/versions/1/statistics/1/range/?from=1&to="
    proxy = {"REMOTE_ADDR": "10.1.1.1"}

    # when two clients come through it, one writing a header of its own before the proxy's
    first = anonymous_client.get(api + "9", HTTP_X_FORWARDED_FOR="198.51.100.1", **proxy)
    spoofed = anonymous_client.get(
        api + "10", HTTP_X_FORWARDED_FOR="203.0.113.9, 198.51.100.1", **proxy
    )
    other = anonymous_client.get(api + "11", HTTP_X_FORWARDED_FOR="198.51.100.2", **proxy)

    # then the address the proxy saw is what counts
    assert (first.status_code, spoofed.status_code, other.status_code) == (200, 429, 200)


def test_the_count_survives_a_full_public_cache(anonymous_client, published, settings):
    from django.core.cache import cache

    # given an address that used its two ranges
    settings.RANGE_QUERY_RATE = "2/min"
    api = f"/api/v1/catalog/{published.series.slug}/versions/1/statistics/1/range/?from=1&to="
    assert [anonymous_client.get(api + to).status_code for to in ("9", "10")] == [200, 200]

    # when the public cache is emptied (as many pages evicting its entries would)
    cache.clear()

    # then the address is still refused: its count is kept apart
    assert anonymous_client.get(api + "11").status_code == 429


def test_the_limit_holds_under_concurrent_requests(published, settings):
    from concurrent.futures import ThreadPoolExecutor

    from django.test import Client

    # given five ranges a minute
    settings.RANGE_QUERY_RATE = "5/min"
    api = f"/api/v1/catalog/{published.series.slug}/versions/1/statistics/1/range/?from=1&to="

    # when one address sends twenty at once
    def ask(i: int) -> int:
        return Client().get(api + str(10 + i)).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(ask, range(20)))

    # then exactly five get past the limit (the count is one atomic increment per request;
    # the threads' own database connections do not see this test's release, so those five are
    # 404s: the limit is checked before the database is read)
    assert answers.count(429) == 15
    assert len(answers) - answers.count(429) == 5


def test_a_refused_page_says_when_to_come_back_and_skips_the_work(
    anonymous_client, published, settings, monkeypatch
):
    from releases import selectors

    settings.RANGE_QUERY_RATE = "1/min"
    page = f"/catalog/{published.series.slug}/v1/?statistic=1&from=1&to="
    assert anonymous_client.get(page + "9").status_code == 200

    # when the address asks again, with decoding the statistics made to fail
    decoded = []
    monkeypatch.setattr(selectors, "release_statistics", lambda **kw: decoded.append(kw))
    refused = anonymous_client.get(page + "10")

    # then the page is refused with Retry-After, like the API, and nothing was decoded
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 60
    assert "Too many ranges asked from your address" in refused.content.decode()
    assert decoded == []


def test_parameters_the_view_does_not_read_and_tracker_cookies_hit_the_cache(
    anonymous_client, published, settings
):
    # given one range answered (and cached)
    settings.RANGE_QUERY_RATE = "1/min"
    api = f"/api/v1/catalog/{published.series.slug}/versions/1/statistics/1/range/"
    assert anonymous_client.get(api + "?from=1&to=9").status_code == 200

    # when the same range is asked with junk parameters, reordered, or with a tracker's cookie
    junk = anonymous_client.get(api + "?to=9&junk=1&from=1")
    anonymous_client.cookies["_ga"] = "GA1.1.123"
    tracked = anonymous_client.get(api + "?from=1&to=9&junk=2")

    # then the cached answer is served and nothing more is counted against the address
    assert (junk.status_code, tracked.status_code) == (200, 200)
    assert junk.json() == tracked.json()


def test_a_bar_is_a_range_clamped_and_summed_like_its_answer(anonymous_client, published):
    from releases.selectors import release_answer_statistics

    # given the 50-bin histogram (one bin to a bar): bins may be published below 0
    html = anonymous_client.get(f"/catalog/{published.series.slug}/v1/").content.decode()
    _, fifty = page_charts(html)
    statistic = release_answer_statistics(release=published)[2]
    bins = [statistic["value"][cell] for cell in statistic["cells"]]

    # then every bar is its bin's range answer: never below 0
    assert fifty["values"] == [max(0.0, b) for b in bins]
    assert min(fifty["minus"]) >= 0
    base = f"/api/v1/catalog/{published.series.slug}/versions/1/statistics/2/range/"
    answer = anonymous_client.get(base + "?from=0&to=2").json()
    assert answer["bins"] == 1
    assert answer["value"] == fifty["values"][0]


def test_a_narrower_last_bar_is_said(curator_client, dataset, django_capture_on_commit_callbacks):
    # given 1,025 bins: bars of 3 bins, the last holding the 2 left over
    release = publish(
        curator_client, dataset.pk, django_capture_on_commit_callbacks, {**RANGES, "bins": 1025}
    )

    html = curator_client.get(f"/catalog/{release.series.slug}/v1/").content.decode()

    (chart,) = page_charts(html)
    assert len(chart["values"]) == 342
    assert chart["width"][-1] == pytest.approx(chart["width"][0] * 2 / 3)
    assert "the last bar the 2 left over, so it is narrower" in html
    assert "Bar chart of the 1,025 bins of" in html


def test_only_range_histograms_are_kept_decoded(anonymous_client, published):
    from releases import selectors

    selectors._published_ranges_kept.clear()
    api = f"/api/v1/catalog/{published.series.slug}/versions/1/statistics/"

    # when a count and a missing position are asked for a range, then a range histogram
    assert anonymous_client.get(api + "0/range/?from=1&to=9").status_code == 404
    assert anonymous_client.get(api + "9/range/?from=1&to=9").status_code == 404
    assert anonymous_client.get(api + "2/range/?from=1&to=9").status_code == 200

    # then only the range histogram is kept, compact
    (kept,) = selectors._published_ranges_kept.values()
    assert kept.values.nbytes == 50 * 8


@pytest.mark.parametrize("text", ["1_0", "١٢", "５", "\u00a07", " 7", "+7", "0x10", "1" * 41, "7."])
def test_a_range_bound_is_plain_decimal_notation(anonymous_client, published, text):
    api = f"/api/v1/catalog/{published.series.slug}/versions/1/statistics/1/range/"

    response = anonymous_client.get(api, {"from": text, "to": "90"})

    if text == "7.":  # a plain decimal still
        assert response.status_code == 200
        return
    assert response.status_code == 400
    assert response.json()["errors"] == {"from": ["must be a finite number, e.g. 20"]}


def test_spellings_of_one_page_share_its_cached_copy(anonymous_client, published, monkeypatch):
    from releases import selectors

    base = f"/catalog/{published.series.slug}/"
    assert anonymous_client.get(base + "v1/").status_code == 200
    decoded = []
    real = selectors.release_statistics
    monkeypatch.setattr(
        selectors, "release_statistics", lambda **kw: decoded.append(1) or real(**kw)
    )

    # when the same page is asked with ignored values, leading zeros, a forged session cookie,
    # a tracker's cookie, or by HEAD
    for path in ("v1/?from=5", "v1/?to=x", "v001/", "v1/?junk=1"):
        assert anonymous_client.get(base + path).status_code == 200
    anonymous_client.cookies["sessionid"] = "forged"
    anonymous_client.cookies["_ga"] = "GA1.1.1"
    assert anonymous_client.get(base + "v1/").status_code == 200
    assert anonymous_client.head(base + "v1/").status_code == 200

    # then every one is the cached page: nothing is decoded again
    assert decoded == []


def test_a_signed_in_reader_is_never_served_a_cached_page(client, curator, published):
    anonymous = client.get(f"/catalog/{published.series.slug}/v1/").content.decode()
    client.force_login(curator)

    mine = client.get(f"/catalog/{published.series.slug}/v1/").content.decode()

    assert "Log out" not in anonymous
    assert "Log out" in mine


def test_an_ipv6_host_is_counted_by_its_64_and_a_missing_address_is_no_error(
    anonymous_client, published, settings
):
    settings.RANGE_QUERY_RATE = "2/min"
    api = f"/api/v1/catalog/{published.series.slug}/versions/1/statistics/1/range/?from=1&to="

    answers = [
        anonymous_client.get(api + str(9 + i), REMOTE_ADDR=f"2001:db8:0:1::{i + 1}").status_code
        for i in range(4)
    ]
    other_network = anonymous_client.get(api + "20", REMOTE_ADDR="2001:db8:0:2::1")
    no_address = anonymous_client.get(api + "21", REMOTE_ADDR="")

    assert answers == [200, 200, 429, 429]
    assert other_network.status_code == 200
    assert no_address.status_code in (200, 429)


def test_when_the_counters_cache_fails_ranges_are_still_answered(
    anonymous_client, published, monkeypatch
):
    from django.core.cache import caches

    from releases.apis.throttles import THROTTLE_CACHE

    def down(*args, **kwargs):
        raise ConnectionError("cache down")

    monkeypatch.setattr(caches[THROTTLE_CACHE], "add", down)
    api = f"/api/v1/catalog/{published.series.slug}/versions/1/statistics/1/range/?from=1&to=9"

    assert anonymous_client.get(api).status_code == 200
