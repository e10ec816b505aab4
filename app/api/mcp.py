"""The MCP server for internal tools: ``search_knowledge_base``, ``ask_knowledge_base`` and ``get_passage`` over
streamable HTTP at ``/mcp``, inside the API application.

Every HTTP request to ``/mcp`` must carry ``Authorization: Bearer <api key>``; the key is resolved by the same code
as the REST API's (``app.api.auth.authenticate``) before the MCP layer sees the request, so a missing, malformed,
unknown or revoked key gets the REST API's 401 JSON answer. The tools then act for that key exactly like the REST
routes ``GET /api/v1/search``, ``POST /api/v1/ask`` and ``GET /api/v1/chunks/{id}``: the same role (agent), the same
tenant and ACL-group filter, the same request quota per call (and token quota for answers), the same audit and usage
records, through the same services (``app.services``). Failures are MCP tool errors whose text is the REST API's error
JSON, ``{"error": {"code": ..., "message": ...}}``.

The server is stateless (each POST is answered on its own, as JSON): no MCP session outlives a request, so no state
can pass between keys, and any API replica can answer any request."""

from __future__ import annotations

import json
import logging
import uuid
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent
from pydantic import Field
from sqlalchemy.exc import DataError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from app.api.auth import Principal, authenticate
from app.api.deps import get_container
from app.api.errors import error_response
from app.container import Container
from app.services import asking
from app.services import search as search_service
from core.errors import AppError, ErrorCode
from core.types import Role

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
REQUIRED_ROLE = Role.AGENT  # what GET /api/v1/search, POST /api/v1/ask and GET /api/v1/chunks/{id} require
_PRINCIPAL = "kbqa.principal"  # ASGI scope key: the principal the endpoint authenticated for this request


def _result(body: dict[str, Any], *, is_error: bool = False) -> CallToolResult:
    """A tool result: the JSON body as text (what most clients show a model) and as structured content."""
    text = json.dumps(body, ensure_ascii=False, default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=body, is_error=is_error)


def _caller(ctx: Context) -> tuple[Container, Principal, Request]:
    """The container and the authenticated principal of the HTTP request carrying this tool call; counts the call
    against the principal's request quota, as the REST routes count each request."""
    request = ctx.request_context.request
    principal = request.scope.get(_PRINCIPAL) if isinstance(request, Request) else None
    if not isinstance(request, Request) or not isinstance(principal, Principal):
        raise AppError(ErrorCode.UNAUTHENTICATED, "use 'Authorization: Bearer <api key>'")
    container = get_container(request)
    container.limiter.check_request(principal.id)
    return container, principal, request


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise AppError(ErrorCode.VALIDATION, message)


def _strings(values: list[str] | None, name: str) -> tuple[str, ...]:
    values = values or []
    _check(
        len(values) <= 50 and all(isinstance(v, str) and 0 < len(v) <= 64 for v in values),
        f"'{name}': at most 50 values of 1-64 characters",
    )
    return tuple(values)


async def _run(coro: Any) -> CallToolResult:
    """Await a tool's work; an ``AppError`` becomes a tool error whose body is the REST API's error JSON."""
    try:
        return _result(await coro)
    except AppError as exc:
        return _result(exc.to_dict(), is_error=True)
    except DataError:  # a value the database refuses (a NUL character on PostgreSQL): the caller's, as in REST
        refused = AppError(ErrorCode.VALIDATION, "the request contains a value the database refuses")
        return _result(refused.to_dict(), is_error=True)
    except Exception:  # noqa: BLE001 - the caller sees a coded error, the log keeps the traceback
        log.exception("MCP tool failed")
        return _result(AppError(ErrorCode.INTERNAL, "internal error").to_dict(), is_error=True)


def build_mcp_server() -> MCPServer:
    # The SDK logs every stateless request's end at INFO ("Terminating session: None"); the access log has them.
    logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)
    server: MCPServer = MCPServer(
        name="kbqa",
        version="0.1.0",
        instructions=(
            "Search the company knowledge base, ask it questions (answers cite their passages), and read a cited "
            "passage. Results are limited to what the API key may see."
        ),
    )

    @server.tool(
        name="search_knowledge_base",
        description="Hybrid search over the knowledge base: ranked passages with chunk id, document title, section, "
        "pages, a snippet and scores. Same as GET /api/v1/search.",
    )
    async def search_knowledge_base(
        ctx: Context,
        query: Annotated[str, Field(description="what to search for (1-2000 characters)")],
        top_k: Annotated[int, Field(description="how many passages (1-100)")] = 10,
        doc_types: Annotated[list[str] | None, Field(description="only these document types, e.g. pdf")] = None,
        tags: Annotated[list[str] | None, Field(description="only documents with one of these tags")] = None,
    ) -> CallToolResult:
        async def work() -> dict[str, Any]:
            container, principal, _ = _caller(ctx)
            _check(
                len(query.strip()) > 0 and len(query) <= search_service.MAX_QUERY_CHARS,
                f"'query' must have 1-{search_service.MAX_QUERY_CHARS} characters",
            )
            _check(1 <= top_k <= search_service.MAX_TOP_K, f"'top_k' must be 1-{search_service.MAX_TOP_K}")
            found = await search_service.search_chunks(
                retriever=container.retriever,
                metrics=container.metrics,
                principal=principal,
                query=query,
                top_k=top_k,
                doc_types=_strings(doc_types, "doc_types"),
                tags=_strings(tags, "tags"),
            )
            return {
                "query": found["query"],
                "results": [
                    {
                        "rank": i,
                        "chunk_id": r["chunk_id"],
                        "document_id": r["document_id"],
                        "title": r["title"],
                        "section": " > ".join(r["section_path"]),
                        "page_start": r["page_start"],
                        "page_end": r["page_end"],
                        "snippet": _snippet(r["text"]),
                        "score": r["score"],
                        "scores": r["scores"],
                    }
                    for i, r in enumerate(found["results"], start=1)
                ],
                "degraded": found["degraded"],
            }

        return await _run(work())

    @server.tool(
        name="ask_knowledge_base",
        description="Ask a question; returns the whole cited answer: text, outcome (answered, partial, not_found), "
        "citations with document title, section, pages and chunk ids. Same as POST /api/v1/ask.",
    )
    async def ask_knowledge_base(
        ctx: Context,
        question: Annotated[str, Field(description="the question (1-4000 characters)")],
        conversation_id: Annotated[str | None, Field(description="continue this conversation of yours")] = None,
        top_k: Annotated[int | None, Field(description="how many passages to retrieve (1-50)")] = None,
    ) -> CallToolResult:
        async def work() -> dict[str, Any]:
            container, principal, request = _caller(ctx)
            _check(
                len(question.strip()) > 0 and len(question) <= asking.MAX_QUESTION_CHARS,
                f"'question' must have 1-{asking.MAX_QUESTION_CHARS} characters",
            )
            _check(top_k is None or 1 <= top_k <= asking.MAX_TOP_K, f"'top_k' must be 1-{asking.MAX_TOP_K}")
            _check(conversation_id is None or 0 < len(conversation_id) <= 64, "'conversation_id' is not valid")
            return await asking.answer_whole(
                container.answer_service,
                principal,
                question=question,
                flt=principal.search_filter(),
                top_k=top_k,
                conversation_id=conversation_id,
                request_id=request.headers.get("x-request-id") or uuid.uuid4().hex,
            )

        return await _run(work())

    @server.tool(
        name="get_passage",
        description="One passage by chunk id (from a search result or a citation): its full text, document title, "
        "section and pages. Same as GET /api/v1/chunks/{id}.",
    )
    async def get_passage(
        ctx: Context, chunk_id: Annotated[str, Field(description="the passage's chunk id")]
    ) -> CallToolResult:
        async def work() -> dict[str, Any]:
            container, principal, _ = _caller(ctx)
            _check(0 < len(chunk_id) <= 128, "'chunk_id' is not valid")
            return await run_in_threadpool(
                search_service.get_passage, chunk_store=container.chunk_store, principal=principal, chunk_id=chunk_id
            )

        return await _run(work())

    return server


def running(server: MCPServer) -> AbstractAsyncContextManager[None]:
    """Run ``server``'s streamable-HTTP session manager for as long as the application runs (enter it in the
    application's lifespan). Each start gets a fresh manager: one can run only once, and an application may be started
    more than once (tests do)."""
    # Stateless JSON answers. No DNS-rebinding check: every request needs a bearer key, which a browser never sends on
    # its own.
    server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return server.session_manager.run()


def _snippet(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class McpEndpoint:
    """The ASGI endpoint at ``/mcp``: authenticates the bearer key like the REST API, checks the role, then hands the
    request to the MCP session manager with the principal in the ASGI scope."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            if not request.headers.get("authorization"):
                raise AppError(ErrorCode.UNAUTHENTICATED, "the MCP endpoint needs 'Authorization: Bearer <api key>'")
            principal = await run_in_threadpool(authenticate, request)
            if not principal.role.allows(REQUIRED_ROLE):
                raise AppError(ErrorCode.FORBIDDEN, f"the MCP tools need the '{REQUIRED_ROLE.value}' role")
        except AppError as exc:
            await error_response(exc)(scope, receive, send)
            return
        scope[_PRINCIPAL] = principal
        await self.server.session_manager.handle_request(scope, receive, send)
