# AuthGate — the two commands a newcomer needs, and the pieces CI runs.
#   make dev    run AuthGate in development mode on 127.0.0.1
#   make test   check the formatting (swift format lint), build and run every test: unit and
#               integration (swift test), those that need
#               a real PostgreSQL (scripts/with-postgres), the parser
#               fuzzer, every public declaration documented, the OpenAPI checks against a live server, the interop suite against
#               real authorization servers, spans exported to a real OTLP receiver, legacy HTTP clients (curl, wget,
#               ab, Python, Node, Java) through a real server, then ASan and TSan runs

SWIFT ?= swift
FUZZ_SECONDS ?= 60
# Sanitizer runs: set SANITIZERS="" to skip, or to "address" for only ASan.
SANITIZERS ?= address thread

.PHONY: deps dev build test lint format unit postgres fuzz openapi interop sanitize bench clean

deps:
	@scripts/install-deps

build: deps
	$(SWIFT) build

dev: deps
	$(SWIFT) build --product authgate
	$$($(SWIFT) build --show-bin-path)/authgate dev

# The toolchain's swift-format with the checked-in .swift-format: `make format` rewrites,
# `make lint` (part of `make test`) fails on any difference or rule broken.
FORMATTED = Sources Tests Fuzz Benchmarks
lint:
	$(SWIFT) format lint --strict --recursive --configuration .swift-format $(FORMATTED)

format:
	$(SWIFT) format format --in-place --recursive --configuration .swift-format $(FORMATTED)

unit: deps
	$(SWIFT) build --build-tests
	timeout 900 $(SWIFT) test --skip-build

# The tests that need PostgreSQL, against a real server of their own (plain `swift test`
# skips them, saying so), then three `authgate serve` replicas sharing one session: a refresh
# storm (and one slower than the lease term), kill -9 of the lease holder, the database
# stopped and started under load, one replica cut off by a silent partition (network
# namespaces: as root only, skipped otherwise), and one device login shared by three
# replicas, its poller killed.
postgres: deps
	$(SWIFT) build --build-tests
	timeout 900 scripts/with-postgres $(SWIFT) test --skip-build --filter PostgresStoreTests
	AUTHGATE_TEST_POSTGRES_OUTAGE=1 timeout 300 scripts/with-postgres $(SWIFT) test --skip-build --filter DatabaseOutageTests
	AUTHGATE_BIN="$$($(SWIFT) build --show-bin-path)/authgate" scripts/scale-out-storm
	AUTHGATE_BIN="$$($(SWIFT) build --show-bin-path)/authgate" scripts/scale-out-kill
	AUTHGATE_BIN="$$($(SWIFT) build --show-bin-path)/authgate" scripts/scale-out-device
	AUTHGATE_BIN="$$($(SWIFT) build --show-bin-path)/authgate" scripts/scale-out-outage
	AUTHGATE_BIN="$$($(SWIFT) build --show-bin-path)/authgate" scripts/scale-out-partition || [ $$? -eq 77 ]

fuzz: deps
	scripts/fuzz $(FUZZ_SECONDS)

openapi: deps
	scripts/check-docs
	scripts/check-openapi
	scripts/check-deploy

interop: deps
	scripts/interop/suite
	scripts/trace-test
	scripts/legacy-clients

sanitize: deps
	scripts/sanitize $(SANITIZERS)

test: lint unit postgres fuzz openapi interop sanitize

bench: deps
	scripts/bench-server
	scripts/bench-proxy
	scripts/bench-storm
	scripts/bench-replicas

clean:
	rm -rf .build .build-* fuzz-artifacts
