# seqvend, built from source. The compile-time checked queries build offline from .sqlx/.
FROM rust:1-bookworm AS build
WORKDIR /src
ENV SQLX_OFFLINE=true
COPY . .
RUN cargo build --release --locked && strip target/release/seqvend

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 seqvend
COPY --from=build /src/target/release/seqvend /usr/local/bin/seqvend
USER seqvend
ENV SEQVEND_LISTEN=0.0.0.0:8080 SEQVEND_LOG_FORMAT=json
# 9464: /metrics on a port of its own where SEQVEND_METRICS_LISTEN names it (docker-compose.yml
# does); unset, /metrics stays on 8080.
EXPOSE 8080 9464
# GET /readyz on the port SEQVEND_LISTEN names; exit 0 only on a 200 (no curl in this image).
HEALTHCHECK --interval=5s --timeout=3s --retries=10 CMD ["seqvend", "healthcheck"]
ENTRYPOINT ["seqvend", "serve"]
