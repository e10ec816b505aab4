# kbqa — make help lists the targets.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export DO_NOT_TRACK := 1
export TOKENIZERS_PARALLELISM := false
KBQA_DATA_DIR ?= ./data
# The demo knowledge base: top-level files only (demo/kb/src holds the sources of the generated DOCX/PDF).
DEMO_DOCS := $(sort $(wildcard demo/kb/*.md demo/kb/*.html demo/kb/*.docx demo/kb/*.pdf))
DEMO_ADMIN ?= admin@example.com
export KBQA_DATA_DIR

.PHONY: help install install-test services services-stop frontend run test test-python test-frontend bench bench-retrieval bench-ingest bench-answer bench-analytics bench-distributed lint api-types demo-docs clean

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2}'

install: ## create .venv and install kbqa, plus Tesseract and LibreOffice for the parsers when root (idempotent)
	@bash scripts/install.sh
	@bash scripts/install-parsers.sh

install-test: ## install everything the tests need (Python, frontend, headless Chromium)
	@KBQA_EXTRAS=dev,local-llm bash scripts/install.sh
	@bash scripts/install-test-extras.sh

services: ## install (Debian) and start PostgreSQL and Redis, build Weaviate, MinIO and Dex (Go, cached) for the tests (idempotent)
	@bash scripts/test-services.sh >/dev/null
	@bash scripts/build-go-servers.sh >/dev/null

services-stop: ## stop the test PostgreSQL and Redis that `make services` started
	@bash scripts/test-services.sh stop

frontend: ## build the web app into frontend/dist (needs npm)
	@bash scripts/build-frontend.sh

run: install frontend ## start kbqa on http://127.0.0.1:8000 with the demo knowledge base
	@$(PY) -m app.cli migrate
	@$(PY) -m app.cli ingest $(DEMO_DOCS)
	@echo; echo "  kbqa is starting on http://127.0.0.1:8000  (API docs: http://127.0.0.1:8000/docs)"
	@echo "  log in as $(DEMO_ADMIN) with password: $$($(PY) -m app.cli users create --email $(DEMO_ADMIN) --name 'Demo admin' --role admin --reset-existing --quiet)"
	@echo "  API key (admin, for tools): $$($(PY) -m app.cli keys create --name demo --role admin --quiet)"
	@echo "  try: curl -N -H \"Authorization: Bearer <key>\" -H 'Content-Type: application/json' \\"
	@echo "         -d '{\"question\":\"How long is the warranty on the Kestrel Hub?\"}' http://127.0.0.1:8000/api/v1/ask"
	@echo "  MCP tools (streamable HTTP, same key as a Bearer token): http://127.0.0.1:8000/mcp"; echo
	@$(PY) -m app.cli serve

test: install-test services ## run every test (unit, integration, e2e); starts PostgreSQL and Redis itself
	@$(MAKE) --no-print-directory test-frontend
	@$(MAKE) --no-print-directory test-python

test-python: services
	@source .cache/test-services.env && KBQA_TEST_REQUIRE_SERVICES=1 $(PY) -m pytest -q --durations=15 tests

test-frontend:
	@bash scripts/build-frontend.sh --test

bench: bench-retrieval bench-ingest bench-answer bench-analytics bench-distributed ## all benchmarks (tables and ratios)

bench-retrieval: install ## retrieval quality on the eval sets (LODO BM25 table, fusion table) + index latency at 100k chunks
	@$(PY) -m evaluation.lodo
	@$(PY) -m evaluation.retrieval --dataset ../shared/eval/beir_scifact
	@$(PY) -m evaluation.retrieval --dataset ../shared/eval/hotpotqa_distractor_sample100 --entities ingestion.entities:EntityExtractor
	@$(PY) -m evaluation.retrieval --dataset ../shared/eval/hotpotqa_distractor_sample100 --configs bm25,hybrid --title-links off
	@$(PY) benchmarks/bench_retrieval.py

bench-ingest: ## ingest the enterprise document set vs a Haystack peer: states, reasons, throughput, stage shares, RSS; restart recovery and fairness
	@KBQA_EXTRAS=dev,bench bash scripts/install.sh
	@$(PY) benchmarks/bench_ingest.py --same-work
	@$(PY) benchmarks/bench_query_during_ingest.py
	@$(PY) benchmarks/bench_ingest_recovery.py

bench-analytics: services ## time each usage-analytics report on 100k logged questions in PostgreSQL (target < 500 ms)
	@source .cache/test-services.env && $(PY) benchmarks/bench_analytics.py --questions 100000

bench-distributed: services ## 2 APIs + 2 workers (PostgreSQL, Redis, Weaviate, MinIO) vs embedded: ingest docs/s, search and first-token p50/p95 at 1/8/32 streams
	@KBQA_EXTRAS=dev,weaviate,s3 bash scripts/install.sh
	@source .cache/test-services.env && $(PY) benchmarks/bench_distributed.py

bench-answer: ## answer quality (demo support set, doc2dial questions and dialogues, SQuAD v2 outcomes) + time to sources / first token per backend
	@KBQA_EXTRAS=dev,local-llm bash scripts/install.sh
	@$(PY) benchmarks/answer_quality.py --sets demo,doc2dial,dialogues,squad2 --backend extractive
	@$(PY) benchmarks/answer_quality.py --sets demo,doc2dial,squad2 --backend local,vllm --limit 40 --n 20
	@$(PY) benchmarks/bench_answer.py

lint: install ## ruff, mypy, and mypy --strict on the ground floor (core/) and the services
	@$(VENV)/bin/ruff check core app retrieval ingestion evaluation tests benchmarks scripts
	@$(VENV)/bin/mypy
	@$(VENV)/bin/mypy --strict core app/services

api-types: install ## regenerate frontend/src/api/schema.gen.ts from the API's OpenAPI schema
	@$(PY) scripts/gen_api_types.py

demo-docs: install ## regenerate the demo DOCX/PDF files from their sources
	@$(PY) scripts/build_demo_docs.py

clean: ## remove the data dir and caches (keeps .venv)
	rm -rf data .pytest_cache .ruff_cache .mypy_cache frontend/dist
