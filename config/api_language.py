"""The API speaks English whatever the client's Accept-Language (README, "Languages"): its
messages, like its data and the published files, are one text for every client and script.
Pages follow the reader's language (LocaleMiddleware, before this)."""

from django.utils import translation

API_PREFIX = "/api/v1/"


class EnglishApiMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(API_PREFIX):
            translation.activate("en")
            request.LANGUAGE_CODE = "en"
        return self.get_response(request)
