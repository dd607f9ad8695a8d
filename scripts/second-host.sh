#!/usr/bin/env bash
# A second executor host on this machine, against the services `make start` is running:
# a worker with its own host id and its own workspace root, polling its own host queue.
#
#   bash scripts/second-host.sh [host-id] [workspace-root]
#     host-id         default: second-host
#     workspace-root  default: .data/hosts/<host-id>/workspaces
#
# Then register a repository on it (its paths are checked by this worker, under its
# TWS_REPOSITORY_ROOTS if set) and create tasks on that repository: their workspaces and agents
# are made here. Ctrl-C stops it; `npx tws hosts` shows it live, then not live ~3 heartbeats after.
# Its worker creates this host's Schedules when it starts (orphan sweep of its own root,
# consistency check of its agents, idle release). It takes every setting as the first host took
# it: run it with the same environment as `make start` (TEMPORAL_*, TWS_TEMPORAL_PORT, TWS_PG_PORT,
# TWS_DATA_DIR, TWS_TASK_QUEUE, ...). Without DATABASE_URL it reads the embedded PostgreSQL's
# password from <data>/secrets.json; without TEMPORAL_ADDRESS it presents the bundled engine's
# client certificate from <data>/engine-tls/ (mutual TLS, as `make start`'s own services do).
# It uses the worker and workflow bundle `make start` built.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
data="${TWS_DATA_DIR:-$root/.data}"
host_id="${1:-second-host}"
workspace_root="${2:-$data/hosts/$host_id/workspaces}"

if [ ! -f "$root/.build/worker/main.js" ] || [ ! -f "$data/workflow-bundle.js" ]; then
  echo "run \`make start\` first (it builds the worker and the workflow bundle)" >&2
  exit 2
fi
if [ -z "${DATABASE_URL:-}" ]; then
  password="$(node -e 'process.stdout.write(encodeURIComponent(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).postgresPassword))' "$data/secrets.json")"
  DATABASE_URL="postgres://postgres:${password}@127.0.0.1:${TWS_PG_PORT:-54329}/task_workspaces"
fi

if [ -z "${TEMPORAL_ADDRESS:-}" ] && [ -f "$data/engine-tls/client.pem" ]; then
  # The bundled engine behind its guard (TWS_ENGINE_GUARD=on): client/launcher/engine-credentials.ts.
  export TEMPORAL_TLS=true \
    TEMPORAL_TLS_CLIENT_CERT_PATH="$data/engine-tls/client.pem" \
    TEMPORAL_TLS_CLIENT_KEY_PATH="$data/engine-tls/client.key" \
    TEMPORAL_TLS_SERVER_CA_CERT_PATH="$data/engine-tls/ca.pem" \
    TEMPORAL_TLS_SERVER_NAME=tws-engine
fi

mkdir -p "$workspace_root" "$data/hosts/$host_id/logs"
cd "$root"
export DATABASE_URL TEMPORAL_ADDRESS="${TEMPORAL_ADDRESS:-127.0.0.1:${TWS_TEMPORAL_PORT:-7233}}" \
  TWS_HOST_ID="$host_id" \
  TWS_WORKSPACE_ROOT="$workspace_root" \
  TWS_LOG_DIR="$data/hosts/$host_id/logs" \
  TWS_DATA_DIR="$data/hosts/$host_id" \
  TWS_WORKFLOW_BUNDLE="$data/workflow-bundle.js"
exec node --max-semi-space-size=4 .build/worker/main.js
