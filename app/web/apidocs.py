"""The API's interactive docs at `/docs`: Swagger UI on the OpenAPI document, both under the
API's auth (`rewake.security.auth.Auth`; the sign-in cookie counts for them, as for the pages).

Swagger UI is served from `/static/swagger-ui/` (its README says which version and why), not
from a CDN: the pages' Content-Security-Policy allows this origin's scripts only, and no other
site's code should run where the sign-in cookie is in force.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from rewake.api.openapi import OPENAPI_PATH
from rewake.web.render import TEMPLATES

router = APIRouter(include_in_schema=False)

DOCS_PATH = "/docs"


@router.get(DOCS_PATH, response_class=HTMLResponse)
def api_docs(request: Request) -> HTMLResponse:
    return TEMPLATES.TemplateResponse(request, "docs.html", {"openapi_url": OPENAPI_PATH})
