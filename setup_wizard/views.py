from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def setup_page(request: HttpRequest) -> HttpResponse:
    # The same page the standalone wizard serves; it asks /api/setup which of the two it is in.
    return render(request, "setup_wizard/setup.html")
