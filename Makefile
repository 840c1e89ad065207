# Silk: every set-up step a fresh machine needs lives here or in package.json.
# `make run` serves the example project on 127.0.0.1:6969 (or $SILK_PORT); `make test` runs every test.

SILK_PORT ?= 6969
SILK_DATA ?= data

.PHONY: install build typecheck run test image soak soak-readers chaos nats-server cluster cluster-down bench bench-http bench-secondary bench-commit bench-admission bench-text bench-vectors bench-vector-ef bench-vector-memory bench-vector-graphs bench-cluster bench-s3 test-snapshots-100k redis-server s3-server chromium clean

# npm ci installs exactly the committed lockfile and never rewrites it (the lockfile lists every platform's optional
# @msgpackr-extract build, so npm ci finds it in sync on every platform).
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	mkdir -p dist && touch $@ dist/.built

install: node_modules/.installed

# dist/ is rebuilt only when a source, the grammar or the compiler settings changed, so a warm `make run` starts at
# once. npm ci runs package.json's `prepare`, which builds dist/, so the install rule stamps it built as well.
BUILD_SOURCES := $(shell find . -name '*.ts' -not -path './node_modules/*' -not -path './dist/*' -not -path './test/*' \
	-not -path './bench/*' -not -path '*/generated/*') \
	protocol/helixql/helixql.peggy scripts/build-parser.mjs tsconfig.json \
	console/index.html $(wildcard console/src/*.css) console/tsconfig.json

dist/.built: node_modules/.installed $(BUILD_SOURCES)
	npm run build
	touch $@

build: dist/.built

# The tests and benchmarks are type-checked too (vitest and tsx strip types without checking them): a test that
# calls an engine function with a wrong signature fails here, not at run time as a confusing TypeError.
typecheck: build
	npx tsc -p test/tsconfig.json
	npx tsc -p bench/tsconfig.json
	npx tsc -p console/tsconfig.json

run: build
	node dist/bin/silk.js serve --project examples --port $(SILK_PORT) --data $(SILK_DATA)

# Two test files at a time (vitest.config.ts); the suites' `silk` processes run dist/ (SILK_TEST_CLI=dist, set by
# scripts/run-tests.mjs), hence `build`. It prints the 15 slowest files before "N passed, N failed". The long runs are
# their own targets, not part of it: soak, soak-readers, chaos (a 12-second `silk chaos run` stays in test/chaos/) and
# test-snapshots-100k.
test: build typecheck redis-server nats-server s3-server chromium
	node scripts/run-tests.mjs

# A 10-minute mixed load (SOAK_SECONDS) on a real server with a SIGKILL every minute and dead readers, then checks that
# every acknowledged write is there exactly once, the .mdb files stayed bounded and /health's p99 stayed under 100 ms.
soak: build
	npx tsx test/soak/soak.ts

# Acknowledged writes against read-only processes SIGKILLed at random moments (4 minutes; SOAK_SECONDS changes it).
soak-readers: build
	npx tsx test/soak/dead-readers.ts

# Jepsen-style runs (docs/CHAOS.md): each workload for $(CHAOS_DURATION) with the five process faults, then the bank
# with those and network partitions, list-append with partitions only and the bank with NATS route partitions only (the published runs), each on a cluster of
# its own under ./chaos-data (made afresh), its history, summary and report.html in ./chaos-out/<run>. Stops at the
# first anomaly (exit code 2).
CHAOS_DURATION ?= 60s
CHAOS_FAULTS ?= kill-leader,kill-follower,kill-nats,kill-coordinator,pause
chaos: build nats-server
	rm -rf ./chaos-data
	node dist/bin/silk.js chaos run --cluster ./chaos-data/bank --workload bank --faults $(CHAOS_FAULTS) --duration $(CHAOS_DURATION) --seed 1 --out ./chaos-out/bank
	node dist/bin/silk.js chaos run --cluster ./chaos-data/list-append --workload list-append --faults $(CHAOS_FAULTS) --duration $(CHAOS_DURATION) --seed 2 --out ./chaos-out/list-append
	node dist/bin/silk.js chaos run --cluster ./chaos-data/register --workload register --faults $(CHAOS_FAULTS) --duration $(CHAOS_DURATION) --seed 3 --out ./chaos-out/register
	node dist/bin/silk.js chaos run --cluster ./chaos-data/bank-partition --workload bank --faults $(CHAOS_FAULTS),partition --duration $(CHAOS_DURATION) --seed 5 --out ./chaos-out/bank-partition
	node dist/bin/silk.js chaos run --cluster ./chaos-data/list-append-partition --workload list-append --faults partition --duration $(CHAOS_DURATION) --seed 1 --out ./chaos-out/list-append-partition
	node dist/bin/silk.js chaos run --cluster ./chaos-data/bank-partition-nats --workload bank --faults partition-nats --duration $(CHAOS_DURATION) --seed 1 --out ./chaos-out/bank-partition-nats

# The hosted gateway's Redis suite and benchmark start a redis-server of their own; install it where we can (the
# suite fails naming the package where we cannot).
redis-server:
	@command -v redis-server >/dev/null || apt-get install -y redis-server || echo "make: install the redis-server package (apt-get install redis-server)" >&2

# The object-storage suites (docs/STORAGE.md) start a real S3-compatible server of their own: Ceph's RADOS Gateway over
# a one-node Ceph cluster on loopback (test/helpers/s3-server.ts). It honours conditional writes (If-None-Match,
# If-Match), which the single-writer fence needs and s3rver ignores.
S3_SERVER_PACKAGES := radosgw ceph-mon ceph-osd
s3-server:
	@command -v radosgw >/dev/null && command -v ceph-mon >/dev/null && command -v ceph-osd >/dev/null || \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(S3_SERVER_PACKAGES) || \
		(apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(S3_SERVER_PACKAGES)) || \
		echo "make: install the packages $(S3_SERVER_PACKAGES) (apt-get install $(S3_SERVER_PACKAGES))" >&2

# The web console's browser test (test/console/) drives Debian's Chromium through playwright-core; it fails naming the
# package where it is missing.
chromium:
	@command -v chromium >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium || \
		(apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium) || \
		echo "make: install the chromium package (apt-get install chromium)" >&2

# A development cluster on this machine (docs/CLUSTER.md): three nats-server processes, the partition replicas and one
# server on $(SILK_PORT), all under ./cluster-data; `make cluster-down` stops them.
cluster: build nats-server
	node dist/bin/silk.js cluster up --dir ./cluster-data --project examples --port $(SILK_PORT)

cluster-down: build
	node dist/bin/silk.js cluster down --dir ./cluster-data

# Snapshots and log truncation at issue 16's size (docs/CLUSTER.md): 100,000 writes through a partition's leader, a
# snapshot every 10,000 entries; the log stays under 30,000 entries and a wiped replica bootstraps (`make test` runs
# the same case with 4,000 writes, a snapshot every 1,000).
test-snapshots-100k: build nats-server
	SILK_SNAPSHOT_WRITES=100000 SILK_SNAPSHOT_EVERY=10000 npx vitest run test/cluster-nats/snapshots.test.ts -t "keeps the log"

# The cluster suites start nats-server processes of their own (a three-server JetStream cluster on loopback).
nats-server:
	@command -v nats-server >/dev/null || test -x /usr/sbin/nats-server || apt-get install -y nats-server || echo "make: install the nats-server package (apt-get install nats-server)" >&2

bench: build
	npx tsx bench/graph.ts

# Silk's query routes under HTTP load next to a bare fastify route answering the same bytes (docs/BENCHMARKS.md).
bench-http: build
	npx tsx bench/http.ts

# Secondary-index lookups on MovieLens ratings against a label scan, and the index build rate (docs/BENCHMARKS.md).
bench-secondary: build
	npx tsx bench/secondary.ts

# What an acknowledged write costs on disk (one fsync each) next to raw lmdb-js: sync, batched, overlapping.
bench-commit: build
	npx tsx bench/commit.ts

# What a commit costs on S3 storage (durability object and local) next to local disk, and a fresh cache's restore
# from segments and from a snapshot, against the Ceph RADOS Gateway on loopback (docs/STORAGE.md).
bench-s3: build s3-server
	npx tsx bench/s3.ts

# What the hosted gateway's rate limit costs per request, in process and in Redis, and /v2/query next to the
# per-query route (docs/GATEWAY.md).
bench-admission: build redis-server
	npx tsx bench/admission.ts

clean:
	rm -rf dist node_modules protocol/helixql/generated

# The container image every Silk pod of deploy/kubernetes runs (deploy/README.md), tagged with package.json's version.
# It needs a Docker daemon and the node:20-bookworm-slim base image; the development machines have neither (no daemon
# runs there), so `make test` checks the Dockerfile statically instead (test/deploy/dockerfile.test.ts).
image:
	docker build -f deploy/Dockerfile -t silk:$(shell node -p "require('./package.json').version") .

# BM25 text index on BEIR SciFact beside a plain in-memory BM25: build docs/s, queries/s, nDCG@10 (docs/BENCHMARKS.md).
bench-text: install
	npx tsx bench/text.ts


# Vector indexes on MNIST: raw hnswlib-node next to Silk's search (cosine, euclidean), a filtered search, and the
# manhattan HNSW against an exact scan (docs/BENCHMARKS.md).
bench-vectors: build
	npx tsx bench/vectors.ts

# The search effort alone: recall@10 and queries/s of Silk next to raw hnswlib-node at each ef of the sweep (MNIST and
# a uniform random set), end to end through db.query at the default ef and at the ef reaching recall 0.95 and 0.99
# (docs/BENCHMARKS.md); what chose the default ef (docs/INDEXES.md).
bench-vector-ef: build
	npx tsx bench/vectors.ts --sweep

# Vector index memory: RSS growth while raw hnswlib-node, Silk's vector family and a whole disk database build the
# MNIST index, each in a process of its own (docs/BENCHMARKS.md).
bench-vector-memory: install
	npx tsx bench/vector-memory.ts

# Persisted vector graphs: the open of 100,000 × 128 vectors with graph files next to a rebuild, and a read-only
# follower's first search after a writer's commit (docs/BENCHMARKS.md).
bench-vector-graphs: install
	npx tsx bench/vector-graphs.ts

# The cluster next to a single server (docs/BENCHMARKS.md, "Cluster"): starts 3 nats-server and 9 silk partition
# processes of its own, and stops them.
bench-cluster: build nats-server
	npx tsx bench/cluster.ts

