#!/bin/sh
# Prints the interpreter `make` builds .venv from (docs/DECISIONS.md D77).
#
# The first `python3.11` or `python3` on PATH, in PATH's order, that is Python 3.11 or newer, can
# make a venv with pip (ensurepip), and runs with the interpreter's core linked into its own
# executable rather than loaded from a shared libpython. Debian's /usr/bin/python3 is such a build
# (with profile-guided and link-time optimisation); pyenv's default build is not (--enable-shared,
# no PGO). GroupX's server spends about two thirds of a Turn's CPU inside the interpreter, and the
# first kind serves a Turn with ~15 % less CPU (docs/DECISIONS.md D77).
# When no interpreter on PATH qualifies, it prints plain `python3`, as before.
# `make PYTHON=/path/to/python3 …` still chooses by hand.

qualifies='
import ensurepip, sys
with open("/proc/self/maps") as maps:
    shared_core = any("libpython" in line for line in maps)
sys.exit(0 if sys.version_info >= (3, 11) and not shared_core else 1)
'

old_ifs=$IFS
IFS=:
for dir in $PATH; do
    IFS=$old_ifs
    for name in python3.11 python3; do
        candidate="${dir:-.}/$name"
        if [ -x "$candidate" ] && "$candidate" -c "$qualifies" >/dev/null 2>&1; then
            echo "$candidate"
            exit 0
        fi
    done
done
echo python3
