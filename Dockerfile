# aiq-operator image: a multi-stage Debian bookworm build.
#   docker build -t aiq-operator:0.1 .
# The first stage compiles the operator with the same Makefile as
# development (release flags, build/rel/); the second carries only the
# binary and the shared libraries it links.
FROM debian:bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential pkg-config ca-certificates \
      libcurl4-openssl-dev libjson-c-dev libsqlite3-dev libyaml-dev \
      libmicrohttpd-dev libgnutls28-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Building the program target directly skips the Makefile's dependency
# installer (the packages above are already there).
RUN make -j"$(nproc)" build/rel/aiq-operator

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates libcurl4 libjson-c5 libsqlite3-0 libyaml-0-2 \
      libmicrohttpd12 \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/aiq && chown 65532:65532 /var/lib/aiq
COPY --from=build /src/build/rel/aiq-operator /usr/local/bin/aiq-operator
USER 65532:65532
EXPOSE 8080
VOLUME ["/var/lib/aiq"]
ENTRYPOINT ["/usr/local/bin/aiq-operator"]
CMD ["--db", "/var/lib/aiq/aiq.db", "--metrics-addr", "0.0.0.0:8080"]
