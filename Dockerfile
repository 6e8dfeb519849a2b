# syntax=docker/dockerfile:1
# Multi-stage: `build` compiles with the dev dependencies; `runtime` (the default
# target, used by the api and worker services) holds the compiled code and the
# production dependencies only, and runs as the unprivileged `node` user;
# `loadtest` adds the load script to the build stage (autocannon is a dev dependency).

ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY common common
COPY api api
COPY worker worker
COPY scripts/bundle.mjs scripts/bundle.mjs
COPY scripts/lib/bundle.mjs scripts/lib/bundle.mjs
# tsc, then one bundled file per process (scripts/lib/bundle.mjs)
RUN npm run build

FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM build AS loadtest
COPY bench/loadtest.mjs bench/loadtest.mjs
USER node
CMD ["node", "bench/loadtest.mjs"]

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --chown=root:root package.json ./
COPY --from=prod-deps /app/node_modules node_modules
COPY --from=build /app/dist dist
USER node
EXPOSE 3000
# The api by default; the worker service runs `node dist/bundle/worker.mjs`.
CMD ["node", "dist/bundle/api.mjs"]
