"""The web page served by `rewake serve` at `/`: sessions, banners, countdowns, actions.

Server-rendered (Jinja2, `templates/`) with one small script and stylesheet (`static/`), no
build step. The pages call the same domain functions as the JSON API, and the script acts
through the JSON API itself, under the same auth:

- `site`: adds the routes, `/static` and HTML error pages to the app;
- `routes`, `signin`: the list and session pages; the sign-in form and its cookie;
- `gate`: where the sign-in cookie counts (used by `rewake.api.deps.Auth`);
- `views`, `detail`: the words a page shows, as pure functions of the API's JSON;
- `render`: templates, and times as UTC `<time>` elements the script shows in the viewer's zone.

This package's `__init__` imports nothing: `rewake.api.deps` imports `gate` while `routes`
imports `rewake.api.deps`.
"""
