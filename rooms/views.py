from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def room_page(request: HttpRequest) -> HttpResponse:
    return render(request, "rooms/room.html")
