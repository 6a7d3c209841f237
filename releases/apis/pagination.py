from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    """`?page=N`, and `?page_size=M` up to 200."""

    page_size_query_param = "page_size"
    max_page_size = 200
