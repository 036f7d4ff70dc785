# hyperfed: hyperfedd and hyperfedctl on Debian 12.
#
#   docker build -t hyperfed .
#
# Builds with Debian 12's own -dev packages and runs on Debian 12 slim with
# only the runtime libraries, as the unprivileged user hyperfed (uid 10001).
# Where no container registry answers, make the two base images first with
# deploy/make-base-images (docs/operations.md, "Containers").
#
# Run: mount the site's config at /etc/hyperfed/hyperfed.yaml and its
# certificates under /etc/hyperfed/certs/ (readable by uid 10001); the state
# (journal, sim queue) lives in the volume /var/lib/hyperfed.

ARG DEBIAN_BUILD_IMAGE=debian:12
ARG DEBIAN_RUN_IMAGE=debian:12-slim

# The runtime first: the libraries, the user, the folders and how the daemon
# runs, without the binaries. The compose tests build only this stage
# (`--target runtime`) and add binaries already built on a Debian 12 host
# (deploy/Dockerfile.prebuilt), so that they do not compile hyperfed twice.
FROM ${DEBIAN_RUN_IMAGE} AS runtime
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libgrpc++1.51 libprotobuf32 libabsl20220623 libyaml-cpp0.7 libsqlite3-0 libssl3 libcpp-httplib0.11 \
      libspdlog1.10 libfmt9 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 hyperfed \
 && useradd --system --uid 10001 --gid hyperfed --home-dir /var/lib/hyperfed --no-create-home \
      --shell /usr/sbin/nologin hyperfed \
 && install -d -o hyperfed -g hyperfed -m 0700 /var/lib/hyperfed \
 && install -d -m 0755 /etc/hyperfed /etc/hyperfed/certs

USER hyperfed
WORKDIR /var/lib/hyperfed
VOLUME ["/var/lib/hyperfed"]
# hyperfedctl inside the container asks the local daemon (and the health check
# uses the same): gRPC on 7100, its certificate checked against the mounted CA
# under the name localhost (scripts/gen-certs puts it in every site
# certificate; set HYPERFED_SERVER_NAME to the site id if yours lacks it).
ENV HYPERFED_ENDPOINT=127.0.0.1:7100 \
    HYPERFED_CA=/etc/hyperfed/certs/ca.pem \
    HYPERFED_SERVER_NAME=localhost
EXPOSE 7100 9100
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["hyperfedctl", "--timeout", "3s", "health"]
ENTRYPOINT ["hyperfedd"]
CMD ["--config", "/etc/hyperfed/hyperfed.yaml"]

FROM ${DEBIAN_BUILD_IMAGE} AS build
ENV DEBIAN_FRONTEND=noninteractive
# GoogleTest only because CMakeLists.txt looks for it; no test is built here.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      cmake make g++ pkg-config \
      libabsl-dev libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libyaml-cpp-dev libsqlite3-dev nlohmann-json3-dev libssl-dev libgtest-dev libgmock-dev libcpp-httplib-dev \
      libcli11-dev libspdlog-dev libboost-context-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the two binaries need, so edits to tests or docs keep the cache.
COPY CMakeLists.txt ./
COPY proto proto
COPY daemon daemon
COPY config config
COPY client client
COPY sim sim
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null \
 && cmake --build build -j"$(nproc)" --target hyperfedd hyperfedctl \
 && strip build/hyperfedd build/hyperfedctl

# The image: the runtime with the binaries built above.
FROM runtime
COPY --from=build /src/build/hyperfedd /src/build/hyperfedctl /usr/local/bin/
# Fails at once if a runtime library is missing, not at the first start.
RUN hyperfedd --help >/dev/null && hyperfedctl --help >/dev/null
