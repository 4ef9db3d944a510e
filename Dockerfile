# syntax=docker/dockerfile:1
#
# tideline's indexer binary. Build from the repository root:
#   docker build -t tideline/indexer .
# Run (the config file is mounted, secrets come from TIDELINE_* env):
#   docker run -v $PWD/deploy/config.yaml:/etc/tideline/config.yaml:ro tideline/indexer
# Subcommands: worker (default), migrate. `dev` needs local tools that this
# image does not have.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
# Only what the binary is built from: the work tree also holds local tool
# state (.tideline/) and build output that must not enter the image. A new
# top-level source folder that app/indexer imports needs a line here.
COPY app ./app
COPY pkg ./pkg
# Static binary (no cgo): runs on an image without libc.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/indexer ./app/indexer

# distroless/static: CA certificates (for https:// and wss:// nodes) and
# tzdata, no shell, no package manager; runs as uid 65532 (nonroot).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/indexer /usr/local/bin/indexer
USER nonroot:nonroot
# /metrics, when metrics.listen is set to 0.0.0.0:9090.
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/indexer"]
CMD ["worker", "--config", "/etc/tideline/config.yaml"]
