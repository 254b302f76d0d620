/* fleetcap changed inputs: an element with data-changed-form="form-id" and data-changed="name name"
   (the what-if result's "Changed from <deployment>" line, templates/planner/_whatif_result.html)
   marks those inputs of that form as changed (class "changed" on their label, app.css) and unmarks
   the others (every mark goes when no such line is left), on load and after each htmx swap. Without
   script the line alone says it. */
(function () {
  "use strict";
  function mark() {
    const lines = document.querySelectorAll("[data-changed-form]");
    if (!lines.length) document.querySelectorAll("label.changed").forEach((l) => l.classList.remove("changed"));
    lines.forEach((line) => {
      const form = document.getElementById(line.dataset.changedForm);
      if (!form) return;
      const changed = new Set((line.dataset.changed || "").split(" ").filter(Boolean));
      form.querySelectorAll("label").forEach((label) => {
        const input = label.querySelector("input[name], select[name]");
        if (input) label.classList.toggle("changed", changed.has(input.name));
      });
    });
  }
  document.addEventListener("DOMContentLoaded", mark);
  document.addEventListener("htmx:afterSettle", mark);
})();
