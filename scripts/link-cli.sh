#!/usr/bin/env bash
# `make cli`: puts `tws` on the PATH as a link to this checkout's bin/tws.mjs, so it runs from any
# folder (bin/tws.mjs finds its compiled CLI from its own real place, through the link).
# Where: BINDIR, else PREFIX/bin, else the first of ~/.local/bin and /usr/local/bin that is on the
# PATH and writable, else ~/.local/bin (made, with a warning that the PATH lacks it).
set -euo pipefail
cd "$(dirname "$0")/.."
target=$(pwd -P)/bin/tws.mjs

on_path() { case ":$PATH:" in *":$1:"*) return 0 ;; *) return 1 ;; esac; }

bindir=${BINDIR:-}
if [ -z "$bindir" ] && [ -n "${PREFIX:-}" ]; then bindir=$PREFIX/bin; fi
if [ -z "$bindir" ]; then
  for candidate in "${HOME:-/nonexistent}/.local/bin" /usr/local/bin; do
    if on_path "$candidate" && [ -d "$candidate" ] && [ -w "$candidate" ]; then bindir=$candidate; break; fi
  done
fi
bindir=${bindir:-${HOME:?HOME is not set: say where with BINDIR=<folder>}/.local/bin}
mkdir -p "$bindir"
link=$bindir/tws

# Only a link is replaced (this checkout's, or another's): a file of that name is someone else's.
if [ -e "$link" ] && [ ! -L "$link" ]; then
  echo "cli: $link exists and is not a link: remove it, or choose another folder with BINDIR=<folder>" >&2
  exit 1
fi
if [ -L "$link" ] && [ "$(readlink "$link")" != "$target" ]; then
  echo "cli: $link led to $(readlink "$link"); it now leads to this checkout"
fi
ln -sfn "$target" "$link"
echo "cli: $link → $target"
if ! on_path "$bindir"; then
  echo "cli: $bindir is not on your PATH: add it (export PATH=\"$bindir:\$PATH\" in your shell's profile), or run $link"
fi
