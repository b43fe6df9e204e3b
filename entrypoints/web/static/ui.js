// memtrove's page works without this file; with it: confirm before a delete or revoke, and show the
// upload's progress while htmx sends an ingest form.
document.addEventListener("submit", function (event) {
  var button = event.submitter;
  if (button && button.dataset.confirm && !window.confirm(button.dataset.confirm)) event.preventDefault();
});
document.addEventListener("htmx:xhr:progress", function (event) {
  var bar = document.getElementById("upload-progress");
  if (bar && event.detail.lengthComputable) {
    bar.hidden = false;
    bar.value = Math.round(100 * event.detail.loaded / event.detail.total);
    document.body.dataset.uploaded = String(bar.value);  // outlives the swap of the result (a test reads it)
    var state = document.getElementById("upload-state");
    if (state) {
      state.hidden = false;
      state.textContent = bar.value < 100 ? "sending: " + bar.value + "%" : "sent; cutting it into chunks…";
    }
  }
});
