"""Secrets on disk for a CLI (agents/drivers/secret_file.py, docs/DECISIONS.md D39)."""

from __future__ import annotations

import os
import stat

from agents.drivers.secret_file import SecretFile, private_directory, sweep


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_secret_file_is_readable_by_its_owner_only_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        secret = SecretFile("config.json", '{"token": "s3cret"}', parent=str(tmp_path))
    finally:
        os.umask(old)

    assert mode(secret.path) == 0o600 and mode(secret.directory) == 0o700
    with open(secret.path) as file:
        assert file.read() == '{"token": "s3cret"}'


def test_removing_a_secret_file_takes_its_directory_and_can_be_repeated(tmp_path):
    secret = SecretFile("config.json", "x", parent=str(tmp_path))

    secret.remove()
    secret.remove()

    assert os.listdir(tmp_path) == []


def test_the_private_directory_is_narrowed_to_its_owner(tmp_path):
    shared = tmp_path / "private"
    shared.mkdir(mode=0o755)

    assert private_directory(str(shared)) == str(shared)
    assert mode(shared) == 0o700


def test_a_link_in_place_of_the_private_directory_is_not_used(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "private").symlink_to(elsewhere)

    assert private_directory(str(tmp_path / "private")) is None


def test_the_sweep_removes_only_what_secret_files_leave(tmp_path):
    left = SecretFile("config.json", "x", parent=str(tmp_path))
    (tmp_path / "notes.txt").write_text("mine")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    (tmp_path / "groupx-link").symlink_to(outside)

    assert sweep(str(tmp_path)) == 1

    assert not os.path.exists(left.directory)
    assert sorted(os.listdir(tmp_path)) == ["groupx-link", "notes.txt"]
    assert (outside / "keep").exists()
    assert sweep(str(tmp_path / "missing")) == 0
