# One image for the api, the worker and the operators' cli; docker-compose.yml picks the process by its command.
# Processes run as `node --import tsx <entry>` (the package scripts without the pnpm wrapper, which would swallow
# SIGTERM and so skip the clean shutdown).
FROM node:20-bookworm-slim
WORKDIR /app
RUN npm install -g pnpm@10.34.9
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY apps/api/package.json apps/api/
COPY apps/cli/package.json apps/cli/
COPY apps/worker/package.json apps/worker/
COPY packages/protocol/package.json packages/protocol/
COPY packages/engine/package.json packages/engine/
COPY packages/tools/package.json packages/tools/
COPY packages/client/package.json packages/client/
RUN pnpm install --frozen-lockfile
COPY . .
ENV NODE_ENV=production
USER node
CMD ["node", "--import", "tsx", "apps/api/src/main.ts"]
