# syntax=docker/dockerfile:1
# Builder: the same scripts CI runs (install-deps, build).
FROM rust:1-slim-bookworm AS builder
WORKDIR /src
COPY . .
RUN scripts/install-deps && scripts/build

# Runtime: SoftHSM2, OpenSC, OpenSSL with the pkcs11 engine, our module
# registered with p11-kit, and hsm-bench and dalek-pkcs11-util on PATH.
FROM debian:bookworm-slim
COPY --from=builder /src/scripts/install-deps /tmp/install-deps
RUN /tmp/install-deps runtime && rm -rf /var/lib/apt/lists/* /tmp/install-deps
WORKDIR /opt/dalek-pkcs11
COPY --from=builder /src/scripts/install scripts/install
COPY --from=builder /src/target/release/libdalek_pkcs11.so /src/target/release/hsm-bench /src/target/release/dalek-pkcs11-util target/release/
COPY --from=builder /src/softhsm softhsm
COPY --from=builder /src/bench-profiles bench-profiles
COPY --from=builder /src/docs/openssl-pkcs11.cnf /src/docs/openssl-provider.cnf /etc/dalek-pkcs11/
RUN scripts/install \
    && sed -i 's|^MODULE_PATH = .*|MODULE_PATH = /usr/local/lib/dalek-pkcs11/libdalek_pkcs11.so|' /etc/dalek-pkcs11/openssl-pkcs11.cnf \
    && useradd --create-home --uid 10001 bench \
    && mkdir -p /data/tokens /results \
    && chown -R bench:bench /data /results
# A directory path, not a secret (hadolint flags the word TOKEN).
# hadolint ignore=DL3064
ENV DALEK_PKCS11_TOKEN_DIR=/data/tokens
VOLUME ["/data"]
USER 10001
ENTRYPOINT ["hsm-bench"]
CMD ["run", "--profile", "quick"]
