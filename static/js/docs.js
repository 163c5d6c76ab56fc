// The API reference page (/docs): Swagger UI renders /openapi.json into
// #api-reference, and the operation index beside it opens an operation
// and scrolls to it. Loaded as a file (the page has no inline script);
// Swagger UI needs no eval.
(function () {
  "use strict";
  const SDK_VERSION = "1.0.0";
  const host = document.getElementById("api-reference");
  if (!host || typeof window.SwaggerUIBundle !== "function") return;
  const csrf = document.querySelector('meta[name="csrf-token"]');

  window.SwaggerUIBundle({
    url: host.dataset.openapiUrl,
    domNode: host,
    deepLinking: true,
    docExpansion: "list",
    displayOperationId: true,
    filter: true,
    validatorUrl: null, // no badge from a third-party validator: everything stays on this site
    // "Try it out" runs as the signed-in user (the session cookie), with
    // the headers the API asks of every client.
    requestInterceptor: function (req) {
      if (!req.headers["X-SDK-Version"]) req.headers["X-SDK-Version"] = SDK_VERSION;
      if (csrf && !/^(GET|HEAD|OPTIONS)$/i.test(req.method || "GET")) req.headers["X-CSRF-Token"] = csrf.content;
      return req;
    },
  });

  function operation(method, path) {
    for (const block of host.querySelectorAll(".opblock")) {
      const p = block.querySelector(".opblock-summary-path");
      const m = block.querySelector(".opblock-summary-method");
      if (p && m && p.dataset.path === path && m.textContent.trim() === method) return block;
    }
    return null;
  }

  document.addEventListener("click", function (e) {
    const link = e.target.closest("a[data-op-path]");
    if (!link) return;
    const block = operation(link.dataset.opMethod, link.dataset.opPath);
    if (!block) return; // not rendered (yet, or filtered out): the link goes to the reference
    e.preventDefault();
    e.stopPropagation(); // Swagger UI's smooth scrolling would follow the link's href
    if (!block.classList.contains("is-open")) {
      const open = block.querySelector(".opblock-summary-control");
      if (open) open.click();
    }
    block.scrollIntoView({ block: "start" });
    const focus = block.querySelector(".opblock-summary-control");
    if (focus) focus.focus({ preventScroll: true });
  });
})();
