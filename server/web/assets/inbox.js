// The inbox refreshes its list when the server reports an event: a call
// that starts or stops waiting shows without a reload. What a user has
// begun (typed in a form, opened an edit) is never replaced: the list
// then stays as it is and a notice offers a reload. No inline script:
// the page's Content-Security-Policy allows only this file.
(function () {
  "use strict";
  var list = document.getElementById("inbox");
  if (!list || list.getAttribute("data-live") !== "1" || !window.EventSource) return;
  var stale = document.getElementById("stale");
  var busy = false, again = false, begun = false;
  list.addEventListener("input", function () { begun = true; });
  list.addEventListener("toggle", function () { begun = true; }, true);
  function held() { return begun || list.contains(document.activeElement); }
  function refresh() {
    if (held()) { if (stale) stale.hidden = false; again = true; return; }
    if (busy) { again = true; return; }
    busy = true;
    list.setAttribute("data-state", "busy");
    var q = new URLSearchParams(location.search);
    q.set("partial", "1");
    q.delete("done");
    fetch("/?" + q.toString(), { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) return;
        if (held()) { if (stale) stale.hidden = false; again = true; return; }
        list.innerHTML = html;
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again && !held()) { again = false; setTimeout(refresh, 250); return; }
        list.setAttribute("data-state", "idle"); // for tests: no refresh under way
      });
  }
  var es = new EventSource("/events");
  ["tool-call-approval", "tool-call-suspended", "decision", "tool-result", "finish", "error", "stalled"].forEach(function (t) {
    es.addEventListener(t, refresh);
  });
  document.addEventListener("focusout", function () { if (again && !held()) { again = false; refresh(); } });
})();
