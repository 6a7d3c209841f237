"""The installation's public signing key, with which anyone can check a version's signed
metadata offline (``manage.py verify_release``, or ``openssl pkeyutl -verify -rawin``).

The endpoint only reads the key, never creates it: a web server that does not share the worker's
key file would otherwise publish a key that signs nothing. Until the first publication (or
``manage.py signing_key --create``) there is no key, and while the key file cannot be used
(``manage.py check`` says why), it answers 503 in the API's error shape."""

import logging

from django.http import HttpResponse, JsonResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from releases.apis.schema import ERROR
from releases.services.signing import SigningKeyProblem, installation_public_key_pem

logger = logging.getLogger(__name__)

PEM_CONTENT_TYPE = "application/x-pem-file"
# The key changes only if its file is lost or replaced: a day in shared caches is safe.
PUBLIC_KEY_MAX_AGE = 86_400
NO_KEY_YET = (
    "This installation has no signing key yet: it is created by the first publication (or by "
    "`python manage.py signing_key --create`)."
)
# Public: the key file's path and the problem itself are for the administrator (logs, check).
KEY_UNUSABLE = (
    "This installation's signing key cannot be used at the moment; its administrator is told "
    "why by `python manage.py check`."
)


def _unavailable(detail: str) -> JsonResponse:
    response = JsonResponse({"detail": detail}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
    response["Cache-Control"] = "no-store"
    return response


class SigningKeyApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="signing_key",
        summary="The Ed25519 public key that signs every version's metadata file (PEM)",
        responses={
            (200, PEM_CONTENT_TYPE): OpenApiResponse(
                OpenApiTypes.STR, description="SubjectPublicKeyInfo, PEM"
            ),
            405: ERROR,
            429: ERROR,
            503: OpenApiResponse(
                ERROR.response, description="No key yet, or the key file cannot be used"
            ),
        },
    )
    def get(self, request):
        try:
            public_pem = installation_public_key_pem()
        except SigningKeyProblem as problem:
            logger.error("GET signing-key: %s", problem)
            return _unavailable(KEY_UNUSABLE)
        if public_pem is None:
            return _unavailable(NO_KEY_YET)
        response = HttpResponse(public_pem, content_type=PEM_CONTENT_TYPE)
        response["Cache-Control"] = f"public, max-age={PUBLIC_KEY_MAX_AGE}"
        response["Content-Disposition"] = 'inline; filename="release-signing-key.pem"'
        return response
