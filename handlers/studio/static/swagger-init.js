// Starts Swagger UI from a file (the docs page allows no inline script).
window.ui = SwaggerUIBundle({
  url: document.currentScript.dataset.openapiUrl,
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  layout: "BaseLayout",
});
