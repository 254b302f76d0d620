// A new record's slug fills itself from its name as the name is typed, until the slug is edited by hand
// (emptied, it follows the name again): <input data-slug-from="id_name"> (fleet.forms.SlugFromName sets
// it, on new records only). Lowercase, runs of other characters as one '-', trimmed, at most the input's
// maxlength. A suggestion only: the server checks the slug.
(function () {
  "use strict";
  function slugify(text, max) {
    let slug = text.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase()
      .replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "");
    if (max > 0) slug = slug.slice(0, max).replace(/-+$/, "");
    return slug;
  }
  function mark(root) {
    // A slug shown back (a refused form) that is not the name's own was typed by hand: keep it.
    for (const slug of root.querySelectorAll("input[data-slug-from]")) {
      const name = document.getElementById(slug.dataset.slugFrom);
      if (name && slug.value && slug.value !== slugify(name.value, slug.maxLength)) slug.dataset.slugEdited = "1";
    }
  }
  document.addEventListener("input", (event) => {
    const input = event.target;
    if (!(input instanceof HTMLInputElement) && !(input instanceof HTMLTextAreaElement)) return;
    if (input.dataset.slugFrom) {
      if (event.isTrusted) input.dataset.slugEdited = input.value ? "1" : "";
      return;
    }
    if (!input.id) return;
    for (const slug of document.querySelectorAll("input[data-slug-from]")) {
      if (slug.dataset.slugFrom === input.id && !slug.dataset.slugEdited) {
        slug.value = slugify(input.value, slug.maxLength);
      }
    }
  });
  document.addEventListener("DOMContentLoaded", () => mark(document));
  document.addEventListener("htmx:load", (event) => mark(event.target));
})();
