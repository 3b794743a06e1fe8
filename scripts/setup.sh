#!/usr/bin/env bash
# Installs everything Tidemark's commands need on a fresh machine with Node.js 20+:
# pnpm (pinned), Debian Chromium for the browser tests (never a downloaded browser),
# and the workspace dependencies from the lockfile. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

PNPM_VERSION=12.4.2
if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version)" != "$PNPM_VERSION" ]; then
  echo "setup: installing pnpm $PNPM_VERSION"
  npm install -g "pnpm@$PNPM_VERSION" --loglevel=error
fi

if [ "${TIDEMARK_SKIP_BROWSER:-0}" != "1" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing Debian chromium"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium >/dev/null
  else
    echo "setup: chromium not found; install it (apt-get install chromium) to run the browser tests" >&2
  fi
fi

echo "setup: installing workspace dependencies"
pnpm install --frozen-lockfile --reporter=append-only
