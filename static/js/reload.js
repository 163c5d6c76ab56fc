// Pages that follow something without a socket (TV for a signed-out
// viewer, "nothing is live", the maintenance page) carry
// data-reload-after="<seconds>" and load themselves again after it. A
// script rather than <meta http-equiv="refresh">, which screen readers
// announce as a page forcing a timed change.
(() => {
  const el = document.querySelector("[data-reload-after]");
  const seconds = el ? Number(el.dataset.reloadAfter) : 0;
  if (seconds > 0) setTimeout(() => window.location.reload(), seconds * 1000);
})();
