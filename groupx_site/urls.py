from django.contrib import admin
from django.http import HttpResponse
from django.urls import path
from django.utils.translation import gettext, gettext_lazy
from django_ratelimit.decorators import ratelimit

from groupx_site.api import api
from groupx_site.pages import javascript_catalog, room_page
from setup_wizard.views import setup_page

admin.site.site_header = gettext_lazy("GroupX administration")
admin.site.site_title = "GroupX"
# Log-in attempts to the admin, throttled by django-ratelimit on Django's cache (docs/DECISIONS.md
# D103): a few a minute for one user name, a few more from one address (on loopback, every client).
LOGINS_PER_USER = "5/m"
LOGINS_PER_ADDRESS = "20/m"


def throttled(login):
    @ratelimit(key="post:username", rate=LOGINS_PER_USER, method="POST", block=False)
    @ratelimit(key="ip", rate=LOGINS_PER_ADDRESS, method="POST", block=False)
    def view(request, *args, **kwargs):
        if getattr(request, "limited", False):
            return HttpResponse(
                gettext("Too many log-in attempts: wait a minute, then try again.") + "\n",
                status=429,
                content_type="text/plain; charset=utf-8",
                headers={"Retry-After": "60"},
            )
        return login(request, *args, **kwargs)

    return view


admin.site.login = throttled(admin.site.login)

urlpatterns = [
    path("", room_page, name="room"),
    path("setup", setup_page, name="setup"),  # Agent Settings
    path("api/", api.urls),
    path("admin/", admin.site.urls),
    # The pages' JavaScript strings in the reader's language (a classic script defining gettext(),
    # ngettext() and interpolate(), loaded before the ES modules; static/rooms/i18n.js reads them).
    path("jsi18n/", javascript_catalog, name="javascript-catalog"),
]
