import re

from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

from releases.services.errors import ValidationFailed

_WHOLE_NUMBER_FROM_ONE = re.compile(r"0*[1-9][0-9]*")


class Pagination(PageNumberPagination):
    """`?page=N` (a whole number ≥ 1, or `last`), and `?page_size=M` (a whole number ≥ 1; sizes
    above 200 are served as 200); empty means absent. Anything else is a 400 naming the
    parameter; a page past the end is a 404."""

    page_size_query_param = "page_size"
    max_page_size = 200

    def paginate_queryset(self, queryset, request, view=None):
        errors: dict[str, list[str]] = {}
        page = request.query_params.get(self.page_query_param) or None
        if page is not None and page not in self.last_page_strings and not _positive(page):
            errors[self.page_query_param] = ["must be a whole number from 1"]
        size = request.query_params.get(self.page_size_query_param) or None
        if size is not None and not _positive(size):
            errors[self.page_size_query_param] = [
                f"must be a whole number from 1 (at most {self.max_page_size} are served)"
            ]
        if errors:
            raise ValidationFailed(errors)
        return super().paginate_queryset(queryset, request, view)

    def get_page_size(self, request) -> int:
        size = request.query_params.get(self.page_size_query_param) or None
        if size is None:
            return self.page_size
        digits = size.lstrip("0")
        # Compared by length first: int() refuses text of thousands of digits.
        if len(digits) > len(str(self.max_page_size)):
            return self.max_page_size
        return min(int(digits), self.max_page_size)


def paginated(view, request, items, render) -> Response:
    """The page of ``items`` the request asks for, each item answered as ``render(item)``, in
    the paginated envelope."""
    paginator = Pagination()
    page = paginator.paginate_queryset(items, request, view=view)
    return paginator.get_paginated_response([render(item) for item in page])


def _positive(text: str) -> bool:
    return _WHOLE_NUMBER_FROM_ONE.fullmatch(text) is not None
