/* fleetcap record pickers (fleet/pickers.py, templates/_pick_input.html): htmx puts suggestion buttons
   under a picker's input as the user types; choosing one puts its slug in the input (with a change
   event, so a live form recomputes) and closes the list. ArrowDown goes from the input into the list,
   the arrows move along it, Escape closes it; a click outside a picker closes its list. Without
   script the input is a plain text field taking the slug. */
(function () {
  "use strict";
  function close(list) {
    list.replaceChildren();
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest(".pick-options button[data-pick]");
    if (button) {
      const list = button.closest(".pick-options");
      const input = document.getElementById(list.dataset.pickFor);
      input.value = button.dataset.pick;
      close(list);
      input.focus();
      input.dispatchEvent(new Event("change", { bubbles: true }));
      return;
    }
    document.querySelectorAll(".picker .pick-options").forEach((list) => {
      if (!list.closest(".picker").contains(event.target)) close(list);
    });
  });

  document.addEventListener("keydown", (event) => {
    const picker = event.target.closest && event.target.closest(".picker");
    const list = picker && picker.querySelector(".pick-options");
    if (!list || !list.childElementCount) return;
    const input = document.getElementById(list.dataset.pickFor);
    if (event.key === "Escape") {
      close(list);
      input.focus();
      event.preventDefault();
      return;
    }
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
    const buttons = Array.from(list.querySelectorAll("button[data-pick]"));
    if (!buttons.length) return;
    const at = buttons.indexOf(document.activeElement);
    const next = event.key === "ArrowDown" ? Math.min(at + 1, buttons.length - 1) : at - 1;
    (next < 0 ? input : buttons[next]).focus();
    event.preventDefault();
  });
})();
