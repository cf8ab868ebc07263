// The inbox refreshes its list when the server reports an event: a call
// that starts or stops waiting shows without a reload. No inline script:
// the page's Content-Security-Policy allows only this file.
(function () {
  "use strict";
  var list = document.getElementById("inbox");
  if (!list || !window.EventSource) return;
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    var q = new URLSearchParams(location.search);
    q.set("partial", "1");
    q.delete("done");
    fetch("/?" + q.toString(), { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        // Keep what the user is typing: refresh only when no form in the
        // list has the focus.
        if (html !== null && !list.contains(document.activeElement)) list.innerHTML = html;
        else if (html !== null) again = true;
      })
      .catch(function () {})
      .then(function () { busy = false; if (again) { again = false; setTimeout(refresh, 250); } });
  }
  var es = new EventSource("/events");
  ["tool-call-approval", "tool-call-suspended", "decision", "tool-result", "finish", "error", "stalled"].forEach(function (t) {
    es.addEventListener(t, refresh);
  });
  document.addEventListener("focusout", function () { if (again) { again = false; refresh(); } });
})();
