# One image for the worker, the gateway and the one-shot set-up; the command picks the role.
FROM node:20-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
ENV NODE_ENV=production
CMD ["node", "--import", "tsx", "client/gateway/main.ts"]
