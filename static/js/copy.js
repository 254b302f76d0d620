// Copy buttons: <button data-copy="element-id"> copies that element's text to the clipboard and says so.
(function () {
  "use strict";
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-copy]");
    if (!button) return;
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
  });
})();
