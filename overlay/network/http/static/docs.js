/* The API's browsable documentation: Swagger UI on /openapi.json, from the
 * install (no CDN), asking no validator elsewhere. */
"use strict";
window.addEventListener("DOMContentLoaded", () => {
  window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui",
                               validatorUrl: null, deepLinking: true});
});
