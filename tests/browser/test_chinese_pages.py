"""A crawl of the public pages in Simplified Chinese (issue 13, point 7): a browser that prefers
zh-Hans finds no interface text left in English. Data is not interface: what the curator named
(titles, columns, categories), numbers, formulas, URLs, hashes and what a template marks
``translate="no"`` (HTML's own "leave this as it is") are set aside before the check; any run of
three or more English words left is untranslated. A negative control runs the same check on the
pages in English, where it must fail."""

import re

import pytest
from playwright.sync_api import Page

from releases.models import Release
from releases.services.releases import release_draft_create, release_submit
from tests.conftest import CLINIC_SCHEMA, csv_upload, make_user
from tests.languages import compiled_catalogues  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("compiled_catalogues"),
]

CHINESE = {"locale": "zh-CN", "extra_http_headers": {"Accept-Language": "zh-Hans"}}
ENGLISH = {"locale": "en-US", "extra_http_headers": {"Accept-Language": "en-US"}}
TITLE = "Clinic visits 2026"
# What the curator named: the table's columns and categories, the release's title.
DATA = [TITLE, "age", "sex", "visits"]
# Three or more words of Latin letters in a row (apostrophes and hyphens inside words).
ENGLISH_RUN = re.compile(r"[A-Za-z][A-Za-z'’-]*(?:[\s,;:()]+[A-Za-z][A-Za-z'’-]*){2,}")
# Visible text nodes of the page, each with whether an ancestor says it is not to translate.
VISIBLE_TEXTS = """() => {
  const texts = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const element = node.parentElement;
    if (!element || element.closest('script, style, template, [translate="no"], .js-plotly-plot')) {
      continue;
    }
    const style = window.getComputedStyle(element);
    if (style.display === 'none' || style.visibility === 'hidden') { continue; }
    const text = node.textContent.trim();
    if (text) { texts.push(text); }
  }
  for (const element of document.querySelectorAll('[aria-label], [title], [placeholder]')) {
    if (element.closest('[translate="no"], .js-plotly-plot')) { continue; }
    for (const name of ['aria-label', 'title', 'placeholder']) {
      const value = element.getAttribute(name);
      if (value) { texts.push(value); }
    }
  }
  texts.push(document.title);
  return texts;
}"""


def untranslated(texts: list[str], data: list[str] = DATA) -> list[str]:
    """Runs of three or more English words in ``texts``, once the data in them is set aside:
    the curator's names (``data``), URLs and paths, hashes, numbers and formulas."""
    found = []
    for text in texts:
        for name in sorted(data, key=len, reverse=True):
            text = text.replace(name, " ")
        text = re.sub(r"https?://\S+|/\S*", " ", text)  # addresses and paths
        text = re.sub(r"\b[0-9a-f]{16,}\b", " ", text)  # hashes
        found += [run for run in ENGLISH_RUN.findall(text) if len(run.split()) >= 3]
    return found


# What Plotly draws as words: the chart's title, axis titles and legend entries.
CHART_WORDS = ", ".join(
    f".js-plotly-plot {part}" for part in (".gtitle", ".xtitle", ".ytitle", ".legendtext")
)


def chart_texts(page: Page) -> list[str]:
    """The words Plotly drew: axis titles, legends."""
    return page.locator(CHART_WORDS).all_text_contents()


@pytest.fixture
def two_versions():
    """Two published versions of one series: a count, a histogram of sex and a mean of age."""
    from releases.services.datasets import dataset_create, dataset_schema_update

    curator = make_user("curator1", "curator")
    dataset = dataset_create(
        owner=curator, name="Clinic", upload=csv_upload(), budget_epsilon="2.0"
    )
    dataset = dataset_schema_update(dataset=dataset, user=curator, schema=CLINIC_SCHEMA)
    releases = []
    for series_slug in (None, "clinic-visits-2026"):
        draft = release_draft_create(
            user=curator,
            dataset=dataset,
            title=TITLE,
            definition={"kind": "pure_dp", "epsilon": 0.5},
            queries=[
                {"kind": "count"},
                {"kind": "histogram", "column": "sex"},
                {"kind": "mean", "column": "age"},
            ],
            series_slug=series_slug and releases[0].series.slug,
        )
        release_submit(release=draft, user=curator)  # the eager task runs on commit
        release = Release.objects.get(pk=draft.pk)
        assert release.status == Release.Status.PUBLISHED
        releases.append(release)
    return releases


def public_pages(release: Release) -> list[str]:
    slug = release.series.slug
    return [
        "/",
        "/catalog/",
        "/catalog/?q=clinic",
        "/catalog/?since=not-a-date",
        f"/catalog/{slug}/v{release.version}/",
        f"/catalog/{slug}/v{release.version}/?statistic=9&from=x&to=1",
        f"/catalog/{slug}/v{release.version}/card/",
        f"/catalog/{slug}/diff/?from=1&to=2",
        f"/catalog/{slug}/diff/?from=0",
        "/accounts/login/",
        "/no-such-page/",
    ]


def crawl(new_context, live_server, release: Release, options: dict) -> dict[str, list[str]]:
    """Each public page's untranslated runs, its <html lang> and, for the version page, its
    chart's words, read with a browser of the given locale."""
    page = new_context(**options).new_page()
    found = {}
    for path in public_pages(release):
        page.goto(f"{live_server.url}{path}")
        texts = page.evaluate(VISIBLE_TEXTS)
        if path.endswith(f"/v{release.version}/"):
            page.wait_for_selector("#chart-1 .main-svg")
            texts += chart_texts(page)
        found[path] = untranslated(texts)
        found[f"{path} lang"] = [page.evaluate("document.documentElement.lang")]
    return found


def test_a_chinese_browser_finds_no_english_on_the_public_pages(
    new_context, live_server, two_versions
):
    # when a browser set to Chinese crawls the public pages
    found = crawl(new_context, live_server, two_versions[1], CHINESE)

    # then every page says it is in Chinese and no interface text is left in English
    languages = {path: texts for path, texts in found.items() if path.endswith(" lang")}
    assert set(map(tuple, languages.values())) == {("zh-hans",)}
    assert {path: runs for path, runs in found.items() if runs and path not in languages} == {}


def test_the_same_crawl_in_english_finds_english_everywhere(new_context, live_server, two_versions):
    # when the same crawl reads the pages with an English browser (the negative control)
    found = crawl(new_context, live_server, two_versions[1], ENGLISH)

    # then the check flags every page: it can see untranslated text
    pages = [path for path in found if not path.endswith(" lang")]
    assert [path for path in pages if not found[path]] == []
    assert {tuple(found[f"{path} lang"]) for path in pages} == {("en",)}


def test_the_switcher_turns_a_page_chinese_without_a_script(new_context, live_server, two_versions):
    # given an English reader on a version page, with scripts off
    page = new_context(java_script_enabled=False, **ENGLISH).new_page()
    path = f"/catalog/{two_versions[0].series.slug}/v1/"
    page.goto(f"{live_server.url}{path}")

    # when they choose 简体中文 in the header's switcher
    page.get_by_label("Language").select_option("zh-hans")
    page.get_by_role("button", name="Change").click()

    # then the same page is shown again, in Chinese, and stays Chinese on the next page
    assert page.url == f"{live_server.url}{path}"
    assert page.evaluate("document.documentElement.lang") == "zh-hans"
    assert "这项保证意味着什么" in page.inner_text("#guarantee")
    page.get_by_role("link", name="目录").click()
    assert page.inner_text("h1") == "已发布数据目录"
