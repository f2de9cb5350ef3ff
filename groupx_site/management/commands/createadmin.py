"""``manage.py createadmin``: the first admin user in one step (the login page and README say so).

Django's ``createsuperuser`` asks for an e-mail address nobody needs here; this asks for a name
(``admin`` if left empty) and a password, twice, checked by Django's password validators. The
password can come from standard input instead (``--password-stdin``) for scripts.
"""

from __future__ import annotations

import getpass
import sys

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

DEFAULT_NAME = "admin"


class Command(BaseCommand):
    help = "Create an admin user for /admin/ (asks for a name and a password)."

    def add_arguments(self, parser):
        parser.add_argument("--username", help=f"the user's name (asked for when missing; default {DEFAULT_NAME})")
        parser.add_argument(
            "--password-stdin",
            action="store_true",
            help="read the password from the first line of standard input instead of asking",
        )

    def handle(self, *args, username=None, password_stdin=False, **options):
        users = get_user_model()
        name = username if username is not None else (input(f"Name [{DEFAULT_NAME}]: ").strip() or DEFAULT_NAME)
        if users.objects.filter(username=name).exists():
            raise CommandError(
                f"a user named {name!r} already exists; pick another name, or change that user's "
                f"password with: manage.py changepassword {name}"
            )
        password = sys.stdin.readline().rstrip("\r\n") if password_stdin else self.ask_password()
        if not password:
            raise CommandError("an empty password was given; nothing was created")
        user = users(username=name, is_staff=True, is_superuser=True)
        try:
            validate_password(password, user)
        except ValidationError as error:
            raise CommandError("the password was refused: " + " ".join(error.messages)) from None
        user.set_password(password)
        user.save()
        self.stdout.write(f"Admin {name!r} created: log in at /admin/ with this name and password.\n")

    def ask_password(self) -> str:
        password = getpass.getpass("Password: ")
        if getpass.getpass("Password (again): ") != password:
            raise CommandError("the two passwords differ; nothing was created")
        return password
