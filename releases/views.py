"""Server-rendered pages (the full set arrives with the pages issue)."""

from django.shortcuts import render

from releases import selectors


def home(request):
    releases = selectors.release_list_published()[:20]
    return render(request, "home.html", {"releases": releases})
