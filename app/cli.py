"""The ``kbqa`` command: serve, worker, migrate, ingest, ask, keys, users, eval."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Multi-threaded BLAS on small matrix-vector products was ~200x slower on busy cores; torch keeps its own threads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from core.settings import Settings  # noqa: E402
from core.types import Role  # noqa: E402

cli = typer.Typer(help="kbqa: enterprise knowledge-base question answering", no_args_is_help=True)
keys_cli = typer.Typer(help="API keys", no_args_is_help=True)
users_cli = typer.Typer(help="Users who log in to the web app", no_args_is_help=True)
eval_cli = typer.Typer(help="Check answers against the tenant's regression set", no_args_is_help=True)
cli.add_typer(keys_cli, name="keys")
cli.add_typer(users_cli, name="users")
cli.add_typer(eval_cli, name="eval")
console = Console()
err = Console(stderr=True)


def _settings() -> Settings:
    try:
        return Settings()
    except Exception as exc:  # noqa: BLE001 - show the validation message, not a traceback
        err.print(f"[red]invalid settings:[/red] {exc}")
        raise typer.Exit(2) from exc


def migrate_database(settings: Settings, revision: str = "head") -> None:
    from alembic import command
    from alembic.config import Config

    root = Path(__file__).resolve().parent.parent
    cfg = Config(str(root / "alembic.ini"))
    cfg.set_main_option("script_location", str(root / "migrations"))
    cfg.set_main_option("sqlalchemy.url", settings.database_url.replace("%", "%%"))
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    command.upgrade(cfg, revision)


@cli.command()
def migrate() -> None:
    """Apply database migrations (alembic upgrade head)."""
    settings = _settings()
    migrate_database(settings)
    console.print(f"database at head: {settings.database_url.split('@')[-1]}")


@cli.command()
def serve(
    host: Annotated[str | None, typer.Option(help="bind address")] = None,
    port: Annotated[int | None, typer.Option(help="port")] = None,
    workers: Annotated[int, typer.Option(help="uvicorn worker processes")] = 1,
) -> None:
    """Run the API (and, in embedded mode, in-process ingestion)."""
    import uvicorn

    settings = _settings()
    migrate_database(settings)
    uvicorn.run(
        "app.main:create_app",
        factory=True,
        host=host or settings.api.host,
        port=port or settings.api.port,
        workers=workers,
        log_config=None,
        timeout_keep_alive=75,
        # uvicorn's own proxy-header handling is off (it trusts X-Forwarded-For from any loopback peer): the app reads
        # the header only from KBQA_API__TRUSTED_PROXIES (app.api.proxies).
        proxy_headers=False,
    )


@cli.command()
def worker(
    concurrency: Annotated[int, typer.Option(help="worker processes")] = 1,
    loglevel: Annotated[str, typer.Option()] = "INFO",
) -> None:
    """Run a Celery ingestion worker (distributed mode) on every per-tenant ``ingest.<k>`` queue, in turn."""
    from ingestion.celery_app import ingest_queues, make_celery

    settings = _settings()
    app = make_celery(settings)
    app.worker_main(
        [
            "worker",
            "-Q",
            ",".join(ingest_queues(settings.ingestion.tenant_queues)),
            "--concurrency",
            str(concurrency),
            "-P",
            "prefork",
            "--loglevel",
            loglevel,
            "--without-gossip",
            "--without-mingle",
        ]
    )


def _walk(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith(".")))
        elif p.is_file():
            files.append(p)
        else:
            err.print(f"[yellow]skipping {p}: not found[/yellow]")
    return files


@cli.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="files or folders")],
    tenant: Annotated[str | None, typer.Option(help="tenant id")] = None,
    acl_groups: Annotated[str | None, typer.Option(help="comma-separated ACL groups")] = None,
    tags: Annotated[str | None, typer.Option(help="comma-separated tags")] = None,
) -> None:
    """Ingest files in-process and wait until each is indexed or failed."""
    from app.main import build_container
    from core.db import repositories as repo
    from ingestion.executors import InlineDispatcher

    settings = _settings().model_copy(
        update={"ingestion": _settings().ingestion.model_copy(update={"executor": "inline"})}
    )
    migrate_database(settings)
    files = _walk(paths)
    if not files:
        err.print("nothing to ingest")
        raise typer.Exit(1)
    container = build_container(settings)
    tenant_id = tenant or settings.default_tenant
    groups = [g.strip() for g in acl_groups.split(",")] if acl_groups else None
    tag_list = [t.strip() for t in tags.split(",")] if tags else None
    results: list[tuple[str, str, str]] = []
    try:
        with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
        ) as progress:
            task = progress.add_task("ingesting", total=len(files))
            for f in files:
                progress.update(task, description=f"ingesting {f.name[:40]}")
                sub = container.ingest.submit(
                    tenant_id=tenant_id, filename=f.name, data=f.read_bytes(), acl_groups=groups, tags=tag_list
                )
                assert isinstance(container.dispatcher, InlineDispatcher)
                container.dispatcher.wait()
                with container.db.session() as s:
                    doc = repo.get_document(session=s, tenant_id=tenant_id, document_id=sub.document.id)
                    status = "unchanged" if sub.duplicate and doc.status == "indexed" else doc.status
                    results.append((f.name, status, doc.failure_reason or f"{doc.chunk_count} chunks"))
                progress.advance(task)
    finally:
        container.close()
    table = Table("file", "status", "detail")
    for row in results:
        table.add_row(*row)
    console.print(table)
    failed = sum(1 for _, s, _ in results if s == "failed")
    console.print(f"{len(results) - failed} indexed, {failed} failed")


@cli.command()
def ask(
    question: Annotated[str, typer.Argument(help="the question")],
    tenant: Annotated[str | None, typer.Option(help="tenant id")] = None,
    top_k: Annotated[int, typer.Option(help="passages to use")] = 6,
) -> None:
    """Answer a question in-process, streaming the answer to the terminal, then list the sources."""
    from app.main import build_container
    from core.types import SearchFilter

    settings = _settings()
    container = build_container(settings)
    sources: list[dict[str, Any]] = []
    flags: list[str] = []

    async def run() -> None:
        async for ev in container.answers.run(
            question,
            flt=SearchFilter(tenant_id=tenant or settings.default_tenant),
            history=[],
            request_id="cli",
            conversation_id=None,
            message_id=None,
            top_k=top_k,
        ):
            data = ev.to_dict()
            if ev.type == "sources":
                sources.extend(data["sources"])
            elif ev.type == "token":
                sys.stdout.write(data["text"])
                sys.stdout.flush()
            elif ev.type == "degraded":
                flags.extend(data.get("reasons", []))
            elif ev.type == "error":
                err.print(f"\n[red]error:[/red] {data.get('message')}")

    try:
        asyncio.run(run())
    finally:
        container.close()
    console.print()
    for s in sources:
        where = " > ".join(s.get("section_path") or [])
        page = f", p. {s['page_start']}" if s.get("page_start") else ""
        console.print(f"[{s['n']}] {s['title']}{' — ' + where if where else ''}{page}")
    if flags:
        console.print(f"[yellow]degraded: {', '.join(flags)}[/yellow]")


def _groups(comma_separated: str | None) -> list[str]:
    """ACL groups from a comma-separated option, held to the same limits as the API's (exit 2 naming the problem)."""
    from core.types import clean_labels

    try:
        return clean_labels(comma_separated.split(","), "ACL groups") if comma_separated else []
    except ValueError as exc:
        err.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc


@keys_cli.command("create")
def keys_create(
    name: Annotated[str, typer.Option(help="a label for the key")] = "cli",
    role: Annotated[Role, typer.Option(help="admin, editor or agent")] = Role.ADMIN,
    tenant: Annotated[str | None, typer.Option(help="tenant id")] = None,
    acl_groups: Annotated[str | None, typer.Option(help="comma-separated ACL groups")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="print only the key")] = False,
) -> None:
    """Create an API key and print it (it is shown once)."""
    from core.db import repositories as repo
    from core.db.session import Database

    groups = _groups(acl_groups)
    settings = _settings()
    migrate_database(settings)
    db = Database(settings.database_url)
    with db.session() as s:
        _, secret = repo.create_api_key(
            session=s,
            tenant_id=tenant or settings.default_tenant,
            name=name,
            role=role,
            acl_groups=groups,
        )
    db.dispose()
    console.print(secret if quiet else f"API key ({role.value}, tenant {tenant or settings.default_tenant}): {secret}")


@users_cli.command("create")
def users_create(
    email: Annotated[str, typer.Option(help="the login e-mail address")],
    name: Annotated[str, typer.Option(help="display name")] = "",
    role: Annotated[Role, typer.Option(help="admin, editor or agent")] = Role.AGENT,
    tenant: Annotated[str | None, typer.Option(help="tenant id")] = None,
    acl_groups: Annotated[str | None, typer.Option(help="comma-separated ACL groups")] = None,
    password_stdin: Annotated[bool, typer.Option("--password-stdin", help="read the password from stdin")] = False,
    reset_existing: Annotated[
        bool, typer.Option("--reset-existing", help="if the user exists, set a new password instead of failing")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="print only the password")] = False,
) -> None:
    """Create a user. Without --password-stdin a random password is generated and printed (once)."""
    import secrets

    from core.db import repositories as repo
    from core.db.session import Database
    from core.errors import AppError
    from core.passwords import password_problem

    password = sys.stdin.readline().rstrip("\n") if password_stdin else secrets.token_urlsafe(12)
    problem = password_problem(password)
    if problem:
        err.print(f"[red]{problem}[/red]")
        raise typer.Exit(2)
    groups = _groups(acl_groups)
    settings = _settings()
    migrate_database(settings)
    db = Database(settings.database_url)
    try:
        with db.session() as s:
            existing = repo.get_user_by_email(session=s, email=email, tenant_id=tenant or settings.default_tenant)
            if existing is not None and reset_existing:
                repo.set_user_password(existing, password, session=s, unlock=True)
                existing.disabled_at = None
                role, tenant = Role(existing.role), existing.tenant_id
            else:
                repo.create_user(
                    session=s,
                    tenant_id=tenant or settings.default_tenant,
                    email=email,
                    name=name,
                    role=role,
                    password=password,
                    acl_groups=groups,
                )
    except AppError as exc:
        err.print(f"[red]{exc.message}[/red]")
        raise typer.Exit(1) from exc
    finally:
        db.dispose()
    if quiet:
        if not password_stdin:
            console.print(password)
    else:
        shown = password if not password_stdin else "(as given)"
        console.print(
            f"user {email.strip().lower()} ({role.value}, tenant {tenant or settings.default_tenant}) password: {shown}"
        )


@users_cli.command("list")
def users_list(tenant: Annotated[str | None, typer.Option(help="tenant id")] = None) -> None:
    """List the users of a tenant."""
    from core.db import repositories as repo
    from core.db.session import Database

    settings = _settings()
    db = Database(settings.database_url)
    table = Table("e-mail", "name", "role", "groups", "last login", "status")
    with db.session() as s:
        for u in repo.list_users(session=s, tenant_id=tenant or settings.default_tenant):
            last = u.last_login_at.strftime("%Y-%m-%d %H:%M") if u.last_login_at else "never"
            status = "disabled" if u.disabled_at else "active"
            table.add_row(u.email, u.name, u.role, ",".join(u.acl_groups), last, status)
    db.dispose()
    console.print(table)


def _candidate_settings(settings: Settings, data_dir: Path | None, overrides: list[str]) -> Settings:
    """``settings`` with another data dir and ``section.key=value`` overrides (values read as JSON when they
    parse, else as text): the candidate of a side-by-side regression run."""
    import json

    data = settings.model_dump()
    if data_dir is not None:
        data["data_dir"] = data_dir
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            err.print(f"[red]--candidate-set wants section.key=value, got {item!r}[/red]")
            raise typer.Exit(2)
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        *path, last = key.strip().split(".")
        node = data
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    try:
        return Settings.model_validate(data)
    except Exception as exc:  # noqa: BLE001 - show the validation message, not a traceback
        err.print(f"[red]invalid candidate settings:[/red] {exc}")
        raise typer.Exit(2) from exc


def _eval_side_by_side(settings: Settings, candidate: Settings, tenant: str, top_k: int) -> None:
    from app.main import build_container
    from app.services.review import compare_regression
    from core.types import SearchFilter

    live = build_container(settings)
    staged = build_container(candidate)
    live.warm_up()
    try:
        out = asyncio.run(compare_regression(
            db=live.db, live=live.answers, candidate=staged.answers, flt=SearchFilter(tenant_id=tenant), top_k=top_k,
        ))
    finally:
        staged.close()
        live.close()
    table = Table("change", "question", "live", "candidate")
    for r in out["results"]:
        table.add_row(r["change"] if r["change"] != "broke" else "[red]broke[/red]", r["question"][:70],
                      "pass" if r["live"]["passed"] else "FAIL", "pass" if r["candidate"]["passed"] else "FAIL")
    console.print(table)
    changes = ", ".join(f"{k} {v}" for k, v in out["changes"].items() if v)
    console.print(f"live {out['live_passed']}/{out['total']} passed, candidate {out['candidate_passed']}/"
                  f"{out['total']} passed ({changes or 'no items'})")
    if out["changes"]["broke"]:
        raise typer.Exit(1)


@eval_cli.command("answers")
def eval_answers(
    tenant: Annotated[str | None, typer.Option(help="tenant id")] = None,
    top_k: Annotated[int | None, typer.Option(help="passages to use (default: the retrieval setting)")] = None,
    candidate_data_dir: Annotated[Path | None, typer.Option(
        help="side by side: also replay against this staging copy of the data dir (its indexes and database)",
    )] = None,
    candidate_set: Annotated[list[str] | None, typer.Option(
        help="side by side: a candidate setting, section.key=value (repeatable), e.g. retrieval.top_k=8",
    )] = None,
) -> None:
    """Replay the tenant's regression set (reviewed items of the review queue) through the answer pipeline: pass or
    fail per item (expected section cited, facts present), with the change against the previous run. The run is
    stored; exits 1 when an item fails.

    With ``--candidate-data-dir`` or ``--candidate-set`` the set is replayed through the live pipeline and the
    candidate side by side instead (nothing stored): a reindex into a staging copy, or a settings change, is checked
    before it goes live; exits 1 when the candidate breaks an item that passes live."""
    from app.main import build_container
    from app.services.review import run_regression
    from core.types import SearchFilter

    settings = _settings()
    if candidate_data_dir is not None or candidate_set:
        candidate = _candidate_settings(settings, candidate_data_dir, candidate_set or [])
        _eval_side_by_side(settings, candidate, tenant or settings.default_tenant, top_k or settings.retrieval.top_k)
        return
    container = build_container(settings)
    container.warm_up()
    try:
        run = asyncio.run(
            run_regression(
                db=container.db,
                answers=container.answers,
                flt=SearchFilter(tenant_id=tenant or settings.default_tenant),
                actor_name="cli",
                top_k=top_k or settings.retrieval.top_k,
            )
        )
    finally:
        container.close()
    table = Table("result", "change", "question", "section", "facts", "outcome")
    mark = {True: "ok", False: "FAIL", None: "-"}
    for r in run["results"]:
        missing = f" (missing: {'; '.join(r['missing_facts'])})" if r["missing_facts"] else ""
        table.add_row(
            "pass" if r["passed"] else "[red]FAIL[/red]", r["change"], r["question"][:70],
            mark[r["section_ok"]], mark[r["facts_ok"]] + missing, r["outcome"],
        )
    console.print(table)
    changes = ", ".join(f"{k} {v}" for k, v in run["changes"].items() if v)
    console.print(f"{run['passed']}/{run['total']} passed ({changes or 'no items'}); run {run['id']}")
    if run["failed"]:
        raise typer.Exit(1)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
