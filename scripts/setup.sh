#!/usr/bin/env bash
# Installs everything Tidemark's commands need on a fresh machine with Node.js 20+:
# pnpm (pinned), and as root on Debian: Chromium for the browser tests (never a downloaded
# browser), Redis (the relay's scale-out tests) and PostgreSQL (the relay's PostgreSQL store
# test: Debian's `postgresql`, whichever major version it installs; the tests use the newest
# /usr/lib/postgresql/<version>/bin); then the workspace dependencies from the lockfile. Safe
# to run again.
# TIDEMARK_SKIP_BROWSER=1 skips Chromium, TIDEMARK_SKIP_SERVERS=1 skips Redis and PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."

PNPM_VERSION=12.4.2
if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version)" != "$PNPM_VERSION" ]; then
  echo "setup: installing pnpm $PNPM_VERSION"
  npm install -g "pnpm@$PNPM_VERSION" --loglevel=error
fi

# The newest PostgreSQL server installed: the highest /usr/lib/postgresql/<version>/bin/postgres
# by version (Debian installs each major version there), or nothing.
postgres_server() {
  local found=() bin
  for bin in /usr/lib/postgresql/*/bin/postgres; do
    if [ -x "$bin" ]; then found+=("$bin"); fi
  done
  if [ "${#found[@]}" -gt 0 ]; then printf '%s\n' "${found[@]}" | sort -V | tail -n 1; fi
}

# Debian packages still missing, by the command that shows each one is there.
missing=()
if [ "${TIDEMARK_SKIP_BROWSER:-0}" != "1" ] && ! command -v chromium >/dev/null 2>&1; then missing+=(chromium); fi
if [ "${TIDEMARK_SKIP_SERVERS:-0}" != "1" ]; then
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  [ -n "$(postgres_server)" ] || missing+=(postgresql)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # The packages' own services are not started: tests start their servers on their own ports.
    # A policy this script creates is removed on exit, also when apt-get fails (set -e).
    policy=/usr/sbin/policy-rc.d
    own_policy=0
    if [ ! -e "$policy" ]; then
      own_policy=1
      trap 'rm -f "$policy"' EXIT
      printf '#!/bin/sh\nexit 101\n' > "$policy"
      chmod +x "$policy"
    fi
    apt-get install -y -qq "${missing[@]}" >/dev/null
    if [ "$own_policy" = "1" ]; then
      rm -f "$policy"
      trap - EXIT
    fi
    if [[ " ${missing[*]} " == *" postgresql "* ]] && [ -z "$(postgres_server)" ]; then
      echo "setup: apt-get installed postgresql, but no PostgreSQL server is there: no executable /usr/lib/postgresql/<version>/bin/postgres" >&2
      exit 1
    fi
  else
    echo "setup: missing ${missing[*]}; install them (apt-get install ${missing[*]}) to run every test" >&2
  fi
fi

echo "setup: installing workspace dependencies"
pnpm install --frozen-lockfile --reporter=append-only
