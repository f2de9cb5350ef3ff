"""The room page (the HTML shell; its data comes from ``/api/bootstrap`` and the stream)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from groupx_site.identity import product_version
from setup_wizard.roster import configured_agents
from setup_wizard.starter import is_demo_roster


def room_page(request: HttpRequest) -> HttpResponse:
    return render(request, "rooms/room.html", {"demo_roster": is_demo_roster(configured_agents()),
                                               "version": product_version()})
