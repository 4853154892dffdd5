#!/usr/bin/env bash
# Whether docs/tools.md and docs/cli.md are what isb_docs generates from the registry and the flags now.
#   check_docs.sh ISB_DOCS DOCS_DIR               exit 1 naming each stale page, with its diff
#   check_docs.sh --self-test ISB_DOCS DOCS_DIR   a copy of the pages with one changed must be found stale
set -u
self_test=0
if [ "${1:-}" = --self-test ]; then self_test=1; shift; fi
isb_docs=$1
docs=$2
tmp=$(mktemp -d /tmp/isb-docs-check-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

check() {  # check GENERATED_DIR COMMITTED_DIR: 0 when every page matches
  local stale=0 page
  for page in tools.md cli.md; do
    if [ ! -f "$2/$page" ]; then
      echo "docs/$page is missing: run make docs" >&2
      stale=1
    elif ! cmp -s "$1/$page" "$2/$page"; then
      echo "docs/$page is out of date: run make docs" >&2
      diff -u "$2/$page" "$1/$page" | head -40 >&2
      stale=1
    fi
  done
  return $stale
}

mkdir "$tmp/generated"
"$isb_docs" "$tmp/generated" || { echo "isb_docs failed" >&2; exit 1; }
if [ $self_test = 0 ]; then
  check "$tmp/generated" "$docs"
  exit $?
fi

# Self-test: the committed pages pass, and a stale cli.md is named (and only it).
mkdir "$tmp/stale"
cp "$docs/tools.md" "$docs/cli.md" "$tmp/stale/"
echo "a line no generator writes" >> "$tmp/stale/cli.md"
check "$tmp/generated" "$tmp/stale" 2> "$tmp/out"
rc=$?
first=$(head -1 "$tmp/out")
if [ $rc != 1 ] || [ "$first" != "docs/cli.md is out of date: run make docs" ]; then
  echo "self-test: expected exit 1 and 'docs/cli.md is out of date: run make docs', got $rc and '$first'" >&2
  exit 1
fi
if grep -q 'tools.md' "$tmp/out"; then
  echo "self-test: tools.md matched but was named stale" >&2
  exit 1
fi
echo "self-test: a stale page is named"
