# syntax=docker/dockerfile:1
#
# One image recipe for every BoxOffice deployable. MODULE names the deployable's directory;
# its main package is MODULE/cmd/<last element of MODULE>:
#
#   docker build --build-arg MODULE=services/catalog -t boxoffice/catalog .
#   docker build --build-arg MODULE=gateway -t boxoffice/gateway .
#
# The binary is static (CGO_ENABLED=0) and runs as a non-root user on distroless, which has no
# shell or package manager: nothing for an intruder to use, and little for a scanner to flag.
# Beside it sits `healthcheck` (cmd/healthcheck), the container healthcheck, since the image
# has no curl or wget. tools/deploycheck/dockerfile_test.go runs the `go build` line below, as
# written, for every deployable, so a broken build path fails `make test` without a Docker
# engine.

ARG GO_VERSION=1.26.8

# modules holds only go.work and the modules' go.mod/go.sum files. A source change re-runs this
# stage, but its output is then unchanged, so the download below stays cached until a
# dependency changes; and a module added to go.work needs no edit here.
FROM golang:${GO_VERSION}-alpine AS modules
WORKDIR /src
COPY . .
RUN mkdir /modules && \
    find . -path ./.git -prune -o \( -name go.work -o -name go.work.sum -o -name go.mod -o -name go.sum \) -type f -print | \
    tar -cf - -T - | tar -xf - -C /modules

FROM golang:${GO_VERSION}-alpine AS build
WORKDIR /src
COPY --from=modules /modules/ ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# MODULE comes after the download so that every deployable's build shares the layers above.
ARG MODULE
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    : "${MODULE:?set --build-arg MODULE=<directory with cmd/<name>>, e.g. services/catalog}" && \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ "./${MODULE}/cmd/${MODULE##*/}" ./cmd/healthcheck && \
    mv "/out/${MODULE##*/}" /out/service

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/service /out/healthcheck /usr/local/bin/
# DATA_DIR defaults to .boxoffice under the working directory: the user's own home.
WORKDIR /home/nonroot
# Numeric, so Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/service"]
