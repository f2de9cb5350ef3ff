"""GroupX's settings (middleware included) with ``bench.floor_django`` as the URLconf."""

from groupx_site.settings import *  # noqa: F403

ROOT_URLCONF = "bench.floor_django"
