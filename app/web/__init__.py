"""The web page served by `rewake serve` at `/`: sessions, banners, countdowns, actions.

Server-rendered (Jinja2, `templates/`) with one small script and stylesheet (`static/`), no
build step. The pages call the same domain functions as the JSON API, and the script acts
through the JSON API itself, under the same auth:

- `site`: adds the routes, `/static` and HTML error pages to the app;
- `routes`, `signin`: the list and session pages; the sign-in form and its cookie;
- `cards`, `detail`: the words a page shows, as pure functions of the API's JSON;
- `render`: templates, times as UTC `<time>` elements the script shows in the viewer's zone,
  and the page a refused browser request is shown.

Where the sign-in cookie counts is `rewake.security.browser`; `rewake.main` mounts the page.
"""
