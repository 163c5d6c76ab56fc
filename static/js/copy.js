// Copy buttons: a button with data-copy="<input id>" copies that input's
// value to the clipboard and says so. No inline handlers (CSP).
(function () {
  "use strict";
  document.addEventListener("click", async (e) => {
    const button = e.target.closest && e.target.closest("[data-copy]");
    if (!button) return;
    const input = document.getElementById(button.dataset.copy);
    if (!input) return;
    try {
      await navigator.clipboard.writeText(input.value);
    } catch (_) {
      input.select(); // the clipboard is refused (no HTTPS): leave it selected to copy by hand
      return;
    }
    const label = button.textContent;
    button.textContent = "Copied";
    setTimeout(() => (button.textContent = label), 1500);
  });
})();
