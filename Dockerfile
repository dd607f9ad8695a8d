# The agent supervisor (native/agent-supervisor.c), compiled where a C compiler is, so the image
# itself carries none.
FROM node:20-bookworm-slim AS supervisor
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY native/ native/
COPY scripts/build-supervisor.sh scripts/
RUN bash scripts/build-supervisor.sh

# One image for the worker, the gateway and the one-shot set-up; the command picks the role.
FROM node:20-bookworm-slim
# bubblewrap: the agent sandbox. In a container it needs user namespaces (or privileges) to run;
# where it cannot, the worker refuses to start, unless the operator sets TWS_AGENT_SANDBOX=none
# (agents then run as the service's user, and /readyz says agentIsolation "none").
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates bubblewrap slirp4netns && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
# Every agent runs under it (executors/host/agent-shim.ts): where a checkout's set-up puts it.
COPY --from=supervisor /src/.tools/agent-supervisor .tools/agent-supervisor
# The services run compiled (.build/), without a TypeScript loader in the process.
RUN node scripts/build.mjs && node .build/worker/bundle.js /app/workflow-bundle.js
# MALLOC_ARENA_MAX and the node flags: client/launcher/service-build.ts (SERVICE_ENV, serviceArgs) says why.
ENV NODE_ENV=production TWS_WORKFLOW_BUNDLE=/app/workflow-bundle.js MALLOC_ARENA_MAX=2
CMD ["node", "--max-semi-space-size=2", "--v8-pool-size=2", ".build/client/gateway/main.js"]
