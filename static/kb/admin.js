// The console's small helpers (a file of its own: the Content-Security-Policy allows no inline script).
// A button with data-copy="ID" copies the text of element ID (the one-time API token) to the clipboard.
(function () {
  "use strict";
  function fallbackCopy(node) {
    var range = document.createRange();
    range.selectNodeContents(node);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    var done = document.execCommand("copy");
    selection.removeAllRanges();
    return done ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-copy]");
    if (!button) return;
    var node = document.getElementById(button.dataset.copy);
    if (!node) return;
    var text = node.textContent;
    var copying = navigator.clipboard && window.isSecureContext
      ? navigator.clipboard.writeText(text).catch(function () { return fallbackCopy(node); })
      : fallbackCopy(node);
    copying.then(function () { button.textContent = "Copied"; },
                 function () { button.textContent = "Select and copy it by hand"; });
  });
})();
