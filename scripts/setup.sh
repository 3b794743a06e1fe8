#!/usr/bin/env bash
# Installs everything Tidemark's commands need on a fresh machine with Node.js 20+:
# pnpm (pinned), and as root on Debian: Chromium for the browser tests (never a downloaded
# browser), Redis (the relay's scale-out tests) and PostgreSQL 15 (the relay's PostgreSQL
# store test); then the workspace dependencies from the lockfile. Safe to run again.
# TIDEMARK_SKIP_BROWSER=1 skips Chromium, TIDEMARK_SKIP_SERVERS=1 skips Redis and PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."

PNPM_VERSION=12.4.2
if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version)" != "$PNPM_VERSION" ]; then
  echo "setup: installing pnpm $PNPM_VERSION"
  npm install -g "pnpm@$PNPM_VERSION" --loglevel=error
fi

# Debian packages still missing, by the command that shows each one is there.
missing=()
if [ "${TIDEMARK_SKIP_BROWSER:-0}" != "1" ] && ! command -v chromium >/dev/null 2>&1; then missing+=(chromium); fi
if [ "${TIDEMARK_SKIP_SERVERS:-0}" != "1" ]; then
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  [ -x /usr/lib/postgresql/15/bin/postgres ] || missing+=(postgresql)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # The packages' own services are not started: tests start their servers on their own ports.
    policy=/usr/sbin/policy-rc.d
    own_policy=0
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && own_policy=1
    fi
    apt-get install -y -qq "${missing[@]}" >/dev/null
    if [ "$own_policy" = "1" ]; then rm -f "$policy"; fi
  else
    echo "setup: missing ${missing[*]}; install them (apt-get install ${missing[*]}) to run every test" >&2
  fi
fi

echo "setup: installing workspace dependencies"
pnpm install --frozen-lockfile --reporter=append-only
