// The API's interactive docs at /docs: Swagger UI (served from /static/swagger-ui/) on the
// OpenAPI document the page names. A file of its own, since the pages allow no inline script.
"use strict";

(function () {
  const root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.dataset.openapiUrl,
    dom_id: "#swagger-ui",
    deepLinking: true,
    // Nothing leaves this origin: no badge from the public validator.
    validatorUrl: null,
  });
})();
