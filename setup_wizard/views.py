from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def setup_page(request: HttpRequest) -> HttpResponse:
    # A static page: its script reads and saves the draft through /api/setup.
    return render(request, "setup_wizard/setup.html")
