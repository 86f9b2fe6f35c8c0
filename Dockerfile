# dubbogw's image: a static binary, CA certificates, a non-root user, no
# shell. Build from a checkout:
#   docker build -t dubbogw .            (or podman build / buildah bud)
# Without pulling a Go image, from a binary built here: scripts/image.sh
# (deploy/Containerfile.prebuilt). deploy/kubernetes runs it.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/dubbogw ./cmd/dubbogw

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/dubbogw /dubbogw
# 65532: the "nonroot" user of distroless images; no /etc/passwd needed.
USER 65532:65532
EXPOSE 8080 8443 9090
ENTRYPOINT ["/dubbogw"]
CMD ["run", "--config", "/etc/dubbogw/config/config.yaml"]
