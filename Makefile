# make run   - set up a local PostgreSQL if needed and start the server on :8080
# make test  - set up everything the tests need, check, and run every test
SHELL := /bin/bash
GO ?= go
export BROWSERSLIST_IGNORE_OLD_DATA := 1

GENERATED_LIST = find views -name '*_templ.go'; echo static/css/app.css static/js/htmx.min.js static/js/ws.js
GENERATED_LIST += ; echo static/js/uplot.min.js static/css/uplot.min.css static/js/lightweight-charts.min.js
GENERATED_LIST += ; echo sdk/openapi.json sdk/api/api.gen.go; find e2e/contract/oas -name '*.go'

.PHONY: run test setup-db setup-test generate check-generated lint

run: setup-db
	DEMO_BOTS=$${DEMO_BOTS:-5} $(GO) run ./cmd/server

# The SDK (sdk/) is a module of its own, with its own tests: they need no
# server; the SDK's tests against a running server are in e2e/gosdk.
test: setup-db setup-test lint check-generated
	cd sdk && $(GO) test -count=1 ./...
	$(GO) test -count=1 -timeout 30m ./...

setup-db:
	@bash db/setup-postgres.sh

# npm packages (Tailwind, htmx, the Playwright driver, LiteSVM), pinned by
# package-lock.json; reinstalled only when the manifest changes.
node_modules/.installed: package.json package-lock.json
	npm install --no-audit --no-fund --loglevel=error
	@touch $@

setup-test: node_modules/.installed
	@command -v chromium >/dev/null || { echo "installing chromium from apt"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# Generated files are committed so that `go run` needs no Node; check-generated
# fails when they differ from what the sources produce.
generate: node_modules/.installed
	$(GO) tool templ generate -log-level error
	npx tailwindcss -c tailwind.config.js -i static/tailwind.css -o static/css/app.css --minify 2>/dev/null
	cp node_modules/htmx.org/dist/htmx.min.js static/js/htmx.min.js
	cp node_modules/htmx-ext-ws/dist/ws.js static/js/ws.js
	cp node_modules/uplot/dist/uPlot.iife.min.js static/js/uplot.min.js
	cp node_modules/uplot/dist/uPlot.min.css static/css/uplot.min.css
	cp node_modules/lightweight-charts/dist/lightweight-charts.standalone.production.js static/js/lightweight-charts.min.js
	$(GO) run ./cmd/server -openapi sdk/openapi.json
	$(GO) tool oapi-codegen -config sdk/oapi-codegen.yaml sdk/openapi.json
	$(GO) tool ogen -config e2e/contract/ogen.yml -target e2e/contract/oas -package oas -clean -loglevel error sdk/openapi.json

check-generated:
	@before=$$( { $(GENERATED_LIST); } | tr ' ' '\n' | sort | xargs sha256sum | sha256sum ); \
	$(MAKE) -s generate; \
	after=$$( { $(GENERATED_LIST); } | tr ' ' '\n' | sort | xargs sha256sum | sha256sum ); \
	if [ "$$before" != "$$after" ]; then \
		echo "generated files were stale; they are regenerated now: commit them"; git status --short views static sdk; exit 1; \
	fi

# A tracked file over 5 MB (a binary, a dump, a screenshot) fails the check.
MAX_FILE_BYTES = 5242880

lint:
	@big=$$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$$1 > $(MAX_FILE_BYTES)'); \
	if [ -n "$$big" ]; then echo "tracked files over 5 MB:"; echo "$$big"; exit 1; fi
	$(GO) vet ./...
	cd sdk && $(GO) vet ./...
	@for m in . sdk; do (cd $$m && $(GO) mod tidy -diff >/dev/null) || { echo "go mod tidy would change $$m/go.mod or go.sum: run it there and commit"; exit 1; }; done
	$(GO) tool staticcheck ./...
	cd sdk && $$(cd .. && $(GO) tool -n staticcheck) ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$') cmd web views static handlers domain db chain e2e sdk 2>/dev/null | sort -u); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
