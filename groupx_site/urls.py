from django.contrib import admin
from django.urls import path

from groupx_site.api import api
from groupx_site.pages import room_page
from setup_wizard.views import setup_page

admin.site.site_header = "GroupX administration"
admin.site.site_title = "GroupX"

urlpatterns = [
    path("", room_page, name="room"),
    path("setup", setup_page, name="setup"),  # Agent Settings (issue 8)
    path("api/", api.urls),
    path("admin/", admin.site.urls),
]
