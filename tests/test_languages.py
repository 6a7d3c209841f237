"""English and Simplified Chinese (issue 13, point 7): every message has a zh-Hans translation,
the catalogue holds every message the templates and the code translate, and a page's language
follows the browser's Accept-Language or the switcher's cookie (English otherwise)."""

import re

import polib
import pytest
from django.conf import settings
from django.test import Client

from tests.languages import (
    CHINESE_CATALOGUE,
    code_messages,
    compiled_catalogues,  # noqa: F401 (a fixture)
    template_messages,
)

pytestmark = pytest.mark.usefixtures("compiled_catalogues")


def catalogue_messages(catalogue: polib.POFile) -> set[tuple[str | None, str]]:
    return {(entry.msgctxt, entry.msgid) for entry in catalogue} | {
        (entry.msgctxt, entry.msgid_plural) for entry in catalogue if entry.msgid_plural
    }


def html_lang(page: str) -> str:
    match = re.search(r'<html lang="([^"]*)">', page)
    assert match is not None, "no <html lang>"
    return match.group(1)


def test_every_message_of_the_chinese_catalogue_is_translated():
    # given the zh-Hans catalogue
    catalogue = polib.pofile(str(CHINESE_CATALOGUE))

    # then no message is untranslated, fuzzy or obsolete
    assert len(catalogue) > 250
    assert [entry.msgid for entry in catalogue.untranslated_entries()] == []
    assert [entry.msgid for entry in catalogue.fuzzy_entries()] == []
    assert [entry.msgid for entry in catalogue.obsolete_entries()] == []
    assert [e.msgid for e in catalogue if e.msgid_plural and not e.msgstr_plural.get(0)] == []


def test_the_catalogue_holds_every_message_the_templates_and_the_code_translate():
    # given the messages the templates and the web code ask Django to translate
    wanted = {**template_messages(), **code_messages()}

    # when compared with the catalogue's
    held = catalogue_messages(polib.pofile(str(CHINESE_CATALOGUE)))

    # then each is there (README, "Languages": how to add one)
    assert len(wanted) > 250
    assert {key: where for key, where in wanted.items() if key not in held} == {}
    # and the catalogue keeps none that nothing asks for any more
    assert sorted(key for key in held if key not in wanted) == []


def test_every_phrase_the_engine_registers_is_a_literal_the_catalogue_can_hold():
    # given every phrase the engine registers once all of it is imported
    import privacy_engine  # noqa: F401 (registers the phrases)
    from privacy_engine.wording import PHRASES

    # then each was written as a literal template where makemessages finds it
    literals = {message for (context, message) in code_messages() if context is None}
    assert len(PHRASES) > 10
    assert [template for template in PHRASES if template not in literals] == []


def test_translations_keep_each_message_s_placeholders():
    # given every translated message
    catalogue = polib.pofile(str(CHINESE_CATALOGUE))
    placeholder = re.compile(r"%\([a-z_]+\)s|%%|%\{[^}]*\}|<[^>]+>|\{\w+\}")

    # then each translation holds the same placeholders, percent signs and markup as its msgid
    differing = {
        entry.msgid: translation
        for entry in catalogue
        for translation in [entry.msgstr or entry.msgstr_plural.get(0, "")]
        if sorted(placeholder.findall(entry.msgid)) != sorted(placeholder.findall(translation))
    }
    assert differing == {}


@pytest.mark.parametrize("accept_language", ["zh-Hans", "zh-CN", "zh-cn,zh;q=0.9,en;q=0.5", "zh"])
def test_a_chinese_browser_gets_the_home_page_in_chinese(db, accept_language):
    # when a browser that prefers Chinese opens the home page
    page = Client().get("/", HTTP_ACCEPT_LANGUAGE=accept_language).content.decode()

    # then the page is in Simplified Chinese, and says so
    assert html_lang(page) == "zh-hans"
    assert "<h1>在形式化隐私保证下发布的统计数据</h1>" in page
    assert "浏览目录" in page
    assert "Statistics published under a formal privacy guarantee" not in page


@pytest.mark.parametrize("accept_language", [None, "en-US,en;q=0.9", "fr-FR", "de,ja;q=0.5"])
def test_any_other_browser_gets_the_home_page_in_english(db, accept_language):
    # when a browser that asks for no language, English or one the app does not speak
    headers = {} if accept_language is None else {"HTTP_ACCEPT_LANGUAGE": accept_language}
    page = Client().get("/", **headers).content.decode()

    # then the page is in English
    assert html_lang(page) == "en"
    assert "<h1>Statistics published under a formal privacy guarantee</h1>" in page
    assert "在形式化隐私保证下发布的统计数据" not in page


def test_every_page_has_the_language_switcher_without_a_script(db):
    # when the home page and the login page are read
    for path in ("/", "/accounts/login/", "/catalog/", "/no-such-page/"):
        page = Client().get(path).content.decode()

        # then each has a form posting to set_language, labelled, with both languages and a button
        form = re.search(
            r'<form method="post" action="/i18n/setlang/" class="language-switcher">(.*?)</form>',
            page,
            re.DOTALL,
        )
        assert form is not None, path
        switcher = form.group(1)
        assert f'<input type="hidden" name="next" value="{path}">' in switcher
        assert '<label for="language-switcher-language">Language</label>' in switcher
        assert re.findall(r'<option value="([^"]+)"', switcher) == ["en", "zh-hans"]
        assert '<option value="en" lang="en" selected>English</option>' in switcher
        assert '<option value="zh-hans" lang="zh-hans">简体中文</option>' in switcher
        assert '<button type="submit">Change</button>' in switcher
        # and no script or style is inline (the Content-Security-Policy refuses them)
        assert "<script" not in switcher
        assert "style=" not in switcher


def test_the_switcher_sets_the_language_cookie_and_goes_back(db):
    # given an English reader on the catalog
    client = Client(enforce_csrf_checks=True)
    assert html_lang(client.get("/catalog/").content.decode()) == "en"

    # when they choose Chinese in the switcher
    response = client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/catalog/"})

    # then they are sent back to the catalog with the language remembered in a cookie
    assert response.status_code == 302
    assert response["Location"] == "/catalog/"
    cookie = response.cookies[settings.LANGUAGE_COOKIE_NAME]
    assert cookie.value == "zh-hans"
    assert cookie["httponly"] is True
    assert cookie["samesite"] == "Lax"
    # and the catalog now speaks Chinese, whatever the browser prefers
    page = client.get("/catalog/", HTTP_ACCEPT_LANGUAGE="en-US").content.decode()
    assert html_lang(page) == "zh-hans"
    assert "<h1>已发布数据目录</h1>" in page

    # when they switch back to English
    client.post("/i18n/setlang/", {"language": "en", "next": "/catalog/"})

    # then the catalog is in English again
    assert html_lang(client.get("/catalog/").content.decode()) == "en"


def test_the_switcher_never_redirects_to_another_site_or_sets_an_unknown_language(db):
    # when the switcher is posted with another site as next, and a language the app lacks
    client = Client()
    away = client.post("/i18n/setlang/", {"language": "zh-hans", "next": "https://evil.test/"})
    unknown = client.post("/i18n/setlang/", {"language": "xx", "next": "/catalog/"})

    # then the first goes home, and the second changes nothing
    assert away.status_code == 302
    assert away["Location"] == "/"
    assert unknown.status_code == 302
    assert settings.LANGUAGE_COOKIE_NAME not in unknown.cookies


def test_the_public_cache_keeps_one_page_per_language(db, settings):
    # given the public cache on
    settings.PUBLIC_CACHE_SECONDS = 60

    # when the catalog is read in English, then in Chinese, then in English again
    english = Client().get("/catalog/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    chinese = Client().get("/catalog/", HTTP_ACCEPT_LANGUAGE="zh-Hans").content.decode()
    again = Client().get("/catalog/", HTTP_ACCEPT_LANGUAGE="en").content.decode()

    # then each reader got their own language, never the other's cached page
    assert html_lang(english) == "en"
    assert html_lang(again) == "en"
    assert html_lang(chinese) == "zh-hans"
    assert "已发布数据目录" in chinese
    assert "已发布数据目录" not in again


def test_the_not_found_page_is_translated(db):
    # when a missing page is asked for in Chinese and in English
    chinese = Client().get("/no-such-page/", HTTP_ACCEPT_LANGUAGE="zh-Hans")
    english = Client().get("/no-such-page/")

    # then both are 404s in their reader's language
    assert chinese.status_code == english.status_code == 404
    assert "<h1>找不到页面</h1>" in chinese.content.decode()
    assert "<h1>Page not found</h1>" in english.content.decode()


def test_the_api_answers_in_english_whatever_the_browser_prefers(db):
    # when the API's 404 is asked for by a Chinese browser
    response = Client().get("/api/v1/no-such-endpoint/", HTTP_ACCEPT_LANGUAGE="zh-Hans")

    # then the API's error shape keeps its English
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}
