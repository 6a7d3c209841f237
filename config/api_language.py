"""The API speaks English whatever the client's Accept-Language (README, "Languages"): its
messages, like its data and the published files, are one text for every client and script.
Pages follow the reader's language (LocaleMiddleware, before this)."""

from django.utils import translation

# The API and its OpenAPI document (the docs page shows the document, in English too).
API_PREFIXES = ("/api/v1/", "/api/schema/")


class EnglishApiMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # path_info: the path below the deployment's prefix (SCRIPT_NAME), if any.
        if request.path_info.startswith(API_PREFIXES):
            translation.activate("en")
            request.LANGUAGE_CODE = "en"
        return self.get_response(request)
