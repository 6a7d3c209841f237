"""Login and logout pages; the login goes through the audited service."""

from django import forms
from django.contrib.auth import login, logout
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from accounts.services import user_login


class LoginForm(forms.Form):
    username = forms.CharField(max_length=150)
    password = forms.CharField(widget=forms.PasswordInput, strip=False)


def _safe_next(request, candidate: str | None) -> str:
    if candidate and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return "/"


def login_page(request):
    next_url = _safe_next(request, request.POST.get("next") or request.GET.get("next"))
    form = LoginForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = user_login(request=request, **form.cleaned_data)
        if user is not None:
            login(request, user)
            return redirect(next_url)
        form.add_error(None, gettext("That username and password do not match an active account."))
    return render(request, "accounts/login.html", {"form": form, "next": next_url})


@require_POST
def logout_page(request):
    logout(request)
    return redirect("/")
