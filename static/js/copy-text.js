// Copy buttons: a button with data-copy-target="ID" copies that element's text. The buttons are
// hidden in the page and shown here only when the browser can copy (the text stays selectable
// either way); a status line near the buttons says whether it worked.
(function () {
  "use strict";
  if (!navigator.clipboard || !navigator.clipboard.writeText) { return; }
  var buttons = document.querySelectorAll("button.copy[data-copy-target]");
  Array.prototype.forEach.call(buttons, function (button) {
    var target = document.getElementById(button.dataset.copyTarget);
    if (!target) { return; }
    var container = button.closest(".card") || document.body;
    var status = container.querySelector(".copy-status");
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(target.textContent.trim()).then(
        function () { if (status) { status.textContent = "Copied."; } },
        function () { if (status) { status.textContent = "Could not copy: select the text instead."; } }
      );
    });
  });
}());
