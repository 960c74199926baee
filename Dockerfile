# Mayfly in a container: `docker build -t mayfly .`, then
#   docker run -p 27017:27017 -p 9216:9216 -v mayfly-data:/data mayfly
# Data lives in the /data volume; the image holds only the binary.

# Build stage: a static binary (no C library needed at run time), with
# the time zone database built in.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -tags timetzdata -ldflags="-s -w" -o /out/mayfly ./cmd/mayfly \
 && mkdir -p /out/data

# Final stage: nothing but the binary and an empty data directory owned by
# the unprivileged user the server runs as.
FROM scratch
COPY --from=build /out/mayfly /mayfly
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
VOLUME ["/data"]
EXPOSE 27017 9216
ENTRYPOINT ["/mayfly"]
CMD ["--bind_ip_all", "--dbpath", "/data", "--http-addr", "0.0.0.0:9216", "--http-allow-remote"]
