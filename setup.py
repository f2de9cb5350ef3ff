"""The distribution's layout beyond what pyproject.toml can say: the project keeps the page's
``templates/`` and ``static/`` at the top of the repository, and the wheel carries them as
``groupx_site/templates`` and ``groupx_site/static``, where Django finds an installed app's own
templates and static files (``groupx_site`` is the first app in ``INSTALLED_APPS``)."""

from setuptools import find_packages, setup

PACKAGES = find_packages(
    include=["groupx_site*", "rooms*", "turns*", "agents*", "memory*", "setup_wizard*", "assistant*"],
    exclude=["*.tests", "*.tests.*"],
)
# The two folders mapped into groupx_site, each with its subfolders as packages of data files.
MAPPED = {"templates": "groupx_site.templates", "static": "groupx_site.static"}

setup(
    packages=PACKAGES + list(MAPPED.values()),
    package_dir={package: folder for folder, package in MAPPED.items()},
    package_data={
        # The compiled catalogs (and their sources): a wheel speaks Chinese with no gettext installed.
        "groupx_site": ["locale/*/LC_MESSAGES/*.mo", "locale/*/LC_MESSAGES/*.po"],
        "groupx_site.templates": ["**/*"],
        "groupx_site.static": ["**/*"],
        "memory": ["templates/**/*"],
        # The demo agents' launchers: the starter config names them as groupx-demo:<name>, resolved
        # through the installed package when the room starts.
        "agents.fakes": ["bin/*"],
    },
    # The sdist carries the fakes' and drivers' own tests; the wheel, what the room runs.
    exclude_package_data={"agents.fakes": ["tests/*"], "agents.drivers": ["tests/*"]},
)
