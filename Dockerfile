# syntax=docker/dockerfile:1
# The hub as compiled JavaScript on node:20, running as the unprivileged `node` user.
# Stage 1 installs the workspace and compiles it (scripts/build.mjs); stage 2 holds
# only the compiled code and production dependencies. `node scripts/check-build.mjs`
# runs the same build and start without Docker.

FROM node:20-bookworm-slim AS build
ENV CI=true COREPACK_ENABLE_DOWNLOAD_PROMPT=0 COREPACK_INTEGRITY_KEYS=0
RUN corepack enable
WORKDIR /src
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml tsconfig.json tsconfig.build.json ./
COPY patches ./patches
COPY packages ./packages
COPY adapters ./adapters
COPY apps ./apps
COPY test/fakes ./test/fakes
COPY test/conformance ./test/conformance
COPY scripts ./scripts
RUN pnpm install --frozen-lockfile
RUN node scripts/build.mjs /app
WORKDIR /app
RUN pnpm install --prod --frozen-lockfile --offline

FROM node:20-bookworm-slim
ENV NODE_ENV=production HUB_STATE_DIR=/state HUB_GATEWAY_HOST=0.0.0.0
WORKDIR /app
COPY --from=build /app /app
RUN mkdir -p /state && chown node:node /state && chmod 700 /state
USER node
VOLUME /state
EXPOSE 18789
# Ready = Redis answers, the process's roles' workers take work and every configured channel is connected
# (503 with the reasons otherwise). Works for every role: a process without ingress answers on its health listener.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "apps/hub/src/healthcheck.js"]
# node is PID 1 and handles SIGTERM itself: drain (lifecycle.drainSeconds), then exit 0.
STOPSIGNAL SIGTERM
# Node's flags for the hub (HUB_NODE_FLAGS in apps/hub/src/v8-tuning.ts): V8 reads them only at start.
CMD ["node", "--max-semi-space-size=64", "apps/hub/src/main.js", "start"]
