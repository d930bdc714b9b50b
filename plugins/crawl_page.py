"""Airflow UI plugin: the "Crawl" page (cycles, the next batch and why, hosts, policy curves, model fits).

A FastAPI app mounted at ``/crawl`` serves the page made by :mod:`crawlcycle.ui.crawl_views` from the snapshot
the writer exports after each cycle, so a page view never opens the DuckDB file, and the quality gates' HTML
reports it links (``/crawl/gates/<cycle>/<gate>/``); an external view puts
"Crawl" in the UI's navigation bar and shows the page inside the UI (``/plugin/crawl``).

Airflow authenticates its own API with a router dependency that does not reach mounted plugin apps, so the
app checks the caller itself: the same JWT (cookie or bearer header) the UI uses, and the auth manager's
permission to read the crawl DAG's runs. A browser without a login is sent to the login page.
"""

from __future__ import annotations

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
from airflow.api_fastapi.core_api.security import GetUserDep
from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, FastAPI, HTTPException, Request, status
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from crawlcycle.airflow.environment import DAG_ID
from crawlcycle.settings.sources import load_settings
from crawlcycle.ui import crawl_views


def may_read_crawl(user: GetUserDep) -> None:
    """Who may read the crawl DAG's runs may read the crawl they made."""
    if not get_auth_manager().is_authorized_dag(method="GET", access_entity=DagAccessEntity.RUN,
                                                details=DagDetails(id=DAG_ID), user=user):
        raise HTTPException(status.HTTP_403_FORBIDDEN, f"not allowed to read the runs of {DAG_ID}")


app = FastAPI(title="Crawl", dependencies=[Depends(may_read_crawl)], docs_url=None, redoc_url=None,
              openapi_url=None)


@app.exception_handler(status.HTTP_401_UNAUTHORIZED)
async def to_login(request: Request, exc: HTTPException) -> Response:
    """A browser goes to the login page (and back here after it); an API client gets the 401."""
    if "text/html" not in request.headers.get("accept", ""):
        return await http_exception_handler(request, exc)
    return RedirectResponse(get_auth_manager().get_url_login(next_url=str(request.url)),
                            status_code=status.HTTP_303_SEE_OTHER)


@app.get("/", response_class=HTMLResponse)
def crawl_page() -> str:
    # Settings are read per request: the page follows the crawl's configuration file.
    return crawl_views.page(load_settings())


@app.get("/gates/{cycle}/{gate}/{path:path}")
def gate_report(cycle: int, gate: str, path: str) -> FileResponse:
    """A file of a gate's HTML report (GX data docs), which the page's gate table links."""
    file = crawl_views.gate_report_file(load_settings(), cycle, gate, path)
    if file is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no report file {path} of gate {gate} in cycle {cycle}")
    return FileResponse(file)


class CrawlPagePlugin(AirflowPlugin):
    name = "crawl_page"
    fastapi_apps = [{"app": app, "url_prefix": "/crawl", "name": "Crawl"}]
    # href is relative: the UI resolves it against its base URL, so the page works under a base_url prefix.
    external_views = [{"name": "Crawl", "href": "crawl/", "destination": "nav", "url_route": "crawl",
                       "nav_top_level": True}]
