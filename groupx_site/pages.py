"""The room page (the HTML shell; its data comes from ``/api/bootstrap`` and the stream)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from setup_wizard.roster import configured_agents
from setup_wizard.starter import is_demo_roster


def room_page(request: HttpRequest) -> HttpResponse:
    # Without an admin user the header's Admin link says how to make one (manage.py createadmin).
    has_admin = get_user_model().objects.filter(is_superuser=True, is_active=True).exists()
    return render(request, "rooms/room.html", {"demo_roster": is_demo_roster(configured_agents()),
                                               "has_admin": has_admin})
