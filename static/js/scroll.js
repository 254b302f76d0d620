/* fleetcap: a box that an HTMX swap replaces by one of the same id (the fleet table, every 5 s) keeps
   its horizontal scroll, so a wide table scrolled on a phone (static/css/app.css) stays where it was. */
(function () {
  "use strict";
  let kept = null;
  document.addEventListener("htmx:beforeSwap", (event) => {
    const target = event.detail.target;
    kept = target && target.id && target.scrollLeft ? { id: target.id, left: target.scrollLeft } : null;
  });
  document.addEventListener("htmx:afterSwap", () => {
    const box = kept && document.getElementById(kept.id);
    if (box) box.scrollLeft = kept.left;
    kept = null;
  });
})();
