/* fleetcap headroom bars: each <span class="fill" data-percent="N"> is drawn N% wide, on load and
   after each HTMX swap. Set from script (CSSOM), since the Content-Security-Policy forbids inline
   style attributes; the numbers are also in the label beside each bar. */
(function () {
  "use strict";
  function draw(root) {
    (root || document).querySelectorAll(".bar .fill[data-percent]").forEach((fill) => {
      const percent = Math.max(0, Math.min(100, parseFloat(fill.dataset.percent) || 0));
      fill.style.width = percent + "%";
    });
  }
  document.addEventListener("DOMContentLoaded", () => draw(document));
  document.addEventListener("htmx:afterSettle", (event) => draw(event.target));
})();
