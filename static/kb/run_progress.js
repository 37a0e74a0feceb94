// Live progress for an ingest run's admin page: polls the run's progress.json while the run is
// queued or running, and reloads once it ends so the per-item table is complete.
(function () {
  "use strict";
  function start() {
    var box = document.querySelector(".kb-run-live");
    if (!box) return;
    var status = box.dataset.status;
    if (status !== "queued" && status !== "running") return;
    var bar = box.querySelector("progress");
    var text = box.querySelector(".kb-run-text");
    var note = box.querySelector(".kb-run-note");
    function poll() {
      fetch(box.dataset.progressUrl, { credentials: "same-origin" })
        .then(function (r) { return r.json(); })
        .then(function (run) {
          bar.value = run.percent;
          text.textContent = run.status + ": " + run.items_done + "/" + run.items_total +
            " items, " + run.chunks_embedded + "/" + run.chunks_total + " chunks embedded, " +
            run.items_failed + " errors";
          if (note) note.textContent = run.note;
          if (run.status === "queued" || run.status === "running") {
            setTimeout(poll, 1000);
          } else {
            window.location.reload();
          }
        })
        .catch(function () { setTimeout(poll, 3000); });
    }
    setTimeout(poll, 1000);
  }
  document.addEventListener("DOMContentLoaded", start);
})();
