// The Manifold console's script, served from the binary at /ui/static/console.js.
// Progressive enhancement only: every page works without it.
// - Live values: on pages marked <body data-refresh="on">, the page is fetched
//   again every REFRESH_MS and each [data-live] element is replaced by its new
//   version (open <details> stay open; a region holding the focus is left alone).
//   Refreshing stops while the tab is hidden (Page Visibility API) and resumes,
//   at once, when it is shown again.
// - Forms with data-confirm ask before they are sent.
// - "/" moves the focus to the page's search field.
(function () {
  'use strict';
  var REFRESH_MS = 5000;
  var body = document.body;
  var status = document.getElementById('live-status');
  var timer = null;
  var stopped = false;

  function say(text, cls) {
    if (!status) { return; }
    status.textContent = text;
    status.className = 'live' + (cls ? ' ' + cls : '');
  }

  function openDetails(root) {
    var ids = [];
    root.querySelectorAll('details[open][id]').forEach(function (d) { ids.push(d.id); });
    return ids;
  }

  function refresh() {
    timer = null;
    if (stopped || document.hidden) { return; }
    fetch(window.location.href, { credentials: 'same-origin', headers: { 'Accept': 'text/html' } })
      .then(function (res) {
        if (res.redirected && res.url.indexOf('/ui/login') !== -1) {
          stopped = true;
          say('session ended: reload the page to log in', 'stale');
          return null;
        }
        if (!res.ok) { throw new Error('HTTP ' + res.status); }
        return res.text();
      })
      .then(function (html) {
        if (html === null) { return; }
        var fresh = new DOMParser().parseFromString(html, 'text/html');
        document.querySelectorAll('[data-live]').forEach(function (old) {
          if (!old.id) { return; }
          var next = fresh.getElementById(old.id);
          if (!next || old.contains(document.activeElement)) { return; }
          var open = openDetails(old);
          old.replaceWith(next);
          open.forEach(function (id) {
            var d = document.getElementById(id);
            if (d) { d.open = true; }
          });
        });
        say('live · updated ' + new Date().toLocaleTimeString());
        schedule();
      })
      .catch(function (e) {
        say('live · update failed (' + e.message + '), retrying', 'stale');
        schedule();
      });
  }

  function schedule() {
    if (stopped || timer !== null || document.hidden) { return; }
    timer = window.setTimeout(refresh, REFRESH_MS);
  }

  if (body && body.dataset.refresh === 'on') {
    document.addEventListener('visibilitychange', function () {
      if (document.hidden) {
        if (timer !== null) { window.clearTimeout(timer); timer = null; }
        say('live updates paused (tab hidden)', 'paused');
      } else {
        refresh();
      }
    });
    say('live');
    schedule();
  }

  document.addEventListener('submit', function (e) {
    var form = e.target;
    if (form && form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      e.preventDefault();
    }
  });

  document.addEventListener('keydown', function (e) {
    if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey) { return; }
    var tag = document.activeElement ? document.activeElement.tagName : '';
    if (tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT') { return; }
    var search = document.querySelector('[data-search]');
    if (search) { e.preventDefault(); search.focus(); }
  });
}());
