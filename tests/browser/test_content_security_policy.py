"""The browser tests' watch for Content-Security-Policy violations catches one (its negative
control), and the pages no other browser test visits satisfy the policy."""

import pytest

from tests.browser.conftest import csp_watched_context
from tests.conftest import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize(
    "inject",
    [
        "document.body.insertAdjacentHTML('beforeend', '<img src=\"https://example.invalid/x.png\">')",
        "const t = document.createElement('style'); t.textContent = 'body { color: red }';"
        " document.head.appendChild(t)",
        "const s = document.createElement('script'); s.textContent = 'window.ran = 1';"
        " document.body.appendChild(s)",
    ],
    ids=["foreign-image", "style-element", "inline-script"],
)
def test_the_watch_fails_a_test_whose_page_violates_the_policy(chromium, live_server, inject):
    def visit_and_inject() -> None:
        with csp_watched_context(chromium) as context:
            page = context.new_page()
            page.goto(f"{live_server.url}/catalog/")
            # when something the policy refuses is injected into a page of the app
            page.evaluate(inject)
            assert page.evaluate("window.ran") is None  # an injected script did not run

    # then the watch fails the test
    with pytest.raises(AssertionError, match="Content-Security-Policy violations"):
        visit_and_inject()


def test_the_api_documentation_and_the_admin_satisfy_the_policy(page, live_server):
    # given an administrator
    admin = make_user("admin1", None)
    admin.is_staff = admin.is_superuser = True
    admin.set_password("admin-pass-123")
    admin.save()

    # when the API's documentation and the admin are opened
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .info")
    page.goto(f"{live_server.url}/admin/login/")
    page.get_by_label("Username").fill("admin1")
    page.get_by_label("Password").fill("admin-pass-123")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("#site-name")
    page.goto(f"{live_server.url}/admin/auth/user/{admin.pk}/change/")
    page.wait_for_selector("#user_form")

    # then the page fixture finds no violation when the test ends
