// Buttons that act on the page, no request:
// <button data-copy="element-id"> copies that element's text to the clipboard and says so;
// <button data-fill='{"id_tp": 8, ...}'> fills those form fields (a refusal's suggested layout).
(function () {
  "use strict";
  function copy(button) {
    const source = document.getElementById(button.dataset.copy);
    if (!source) return;
    const text = source.textContent;
    const label = button.textContent;
    const done = (word) => { button.textContent = word; setTimeout(() => { button.textContent = label; }, 1500); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(() => done("Copied"), () => done("Select and copy"));
    } else {
      const range = document.createRange();
      range.selectNodeContents(source);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      done(document.execCommand && document.execCommand("copy") ? "Copied" : "Selected: press Ctrl+C");
    }
  }
  function fill(button) {
    const values = JSON.parse(button.dataset.fill);
    for (const [id, value] of Object.entries(values)) {
      const input = document.getElementById(id);
      if (input) { input.value = value; input.dispatchEvent(new Event("input", { bubbles: true })); }
    }
    button.classList.add("used");
  }
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-copy], button[data-fill]");
    if (!button) return;
    if (button.dataset.copy) copy(button);
    else fill(button);
  });
})();
