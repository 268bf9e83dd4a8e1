# Skiff: the product is always built with CGO_ENABLED=0 into one static binary.
export CGO_ENABLED := 0
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build run test test-deps check clean packages screenshots

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o skiff ./cmd/skiff

# dist/skiff_<V>_amd64.deb and dist/skiff-<V>-1.x86_64.rpm (docs/packaging.md).
# PKG_VERSION=1.2.3 sets the version; SOURCE_DATE_EPOCH is honoured.
packages:
	$(GO) run ./packaging --out dist $(if $(PKG_VERSION),--version $(PKG_VERSION))

# A single-node cluster on localhost with its data in ./skiff-data.
run: build
	./skiff serve --listen localhost:9092 --etcd-client localhost:9093 --etcd-peer localhost:9094 --http localhost:9644 --data-dir ./skiff-data

# Everything CI runs: installs what the tests need, checks formatting and vet,
# then runs every test, then every benchmark once (-benchtime 1x) so that none
# can rot; measuring is `go test -bench` with a real -benchtime, or skiff bench
# (docs/performance.md).
test: test-deps check
	$(GO) test -count=1 -timeout 40m ./...
	$(GO) test -count=1 -timeout 20m -run '^$$' -bench . -benchtime 1x ./...

# The console's screenshots in docs/console/ (docs/console.md, README), taken by its
# browser test on a three-node cluster.
screenshots:
	SKIFF_CONSOLE_SHOTS=$(CURDIR)/docs/console $(GO) test -count=1 -run '^TestConsoleInBrowser$$' ./console/

test-deps:
	./scripts/test-deps.sh

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf skiff dist
