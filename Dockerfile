# The runner as users get it: the installable package mcp-task-runner, built from this repository and installed with
# npm into /app, with `mcpt` as the entrypoint. `docker run IMAGE api`, `docker run IMAGE worker` (MCPT_TOOLS, or
# the demo tools with `worker --demo`), `docker run IMAGE overview` and the other operator commands. README.md, "Docker", shows how to add
# your tools: a derived image `FROM` this one, or a folder mounted under /app with MCPT_TOOLS.

# Node 22 in every stage: the published package admits Node >= 22.15 (apps/runner/package.json, publishConfig.engines).
# Build stage: the workspace, then the package's tarball (pnpm run pack without the npx wrapper).
FROM node:22-bookworm-slim AS build
WORKDIR /src
RUN npm install -g pnpm@10.34.9
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY apps/api/package.json apps/api/
COPY apps/cli/package.json apps/cli/
COPY apps/worker/package.json apps/worker/
COPY packages/protocol/package.json packages/protocol/
COPY packages/runtime/package.json packages/runtime/
COPY packages/engine/package.json packages/engine/
COPY packages/tools/package.json packages/tools/
COPY packages/client/package.json packages/client/
COPY apps/runner/package.json apps/runner/
RUN pnpm install --frozen-lockfile
COPY . .
RUN cd apps/runner && pnpm run build && pnpm pack --pack-destination /dist

# Runtime stage: plain Node, the package and zod installed by npm as a user would, no sources, no tsx.
FROM node:22-bookworm-slim
WORKDIR /app
COPY --from=build /dist/ /tmp/dist/
RUN echo '{ "name": "mcpt-app", "private": true, "type": "module" }' > package.json \
  && npm install --omit=dev --no-audit --no-fund /tmp/dist/mcp-task-runner-*.tgz zod@4.6.7 \
  && rm -rf /tmp/dist /root/.npm
ENV NODE_ENV=production
USER node
ENTRYPOINT ["/app/node_modules/.bin/mcpt"]
CMD ["api"]
