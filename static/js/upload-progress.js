// Sends the upload form with XMLHttpRequest so that a bar shows the transfer (bytes sent of the
// total). Whatever the server answers then replaces this page, exactly as a plain post would show
// it: the dataset page after the redirect (with its message and its own scripts), or this form
// again with its errors and the values typed. Without JavaScript the form posts as usual.
(function () {
  "use strict";
  var form = document.getElementById("upload-form");
  if (!form || !window.FormData || !window.XMLHttpRequest || !window.history.pushState) { return; }
  var box = document.getElementById("upload-transfer");
  var bar = document.getElementById("transfer-progress");
  var text = document.getElementById("transfer-text");
  var button = form.querySelector("button[type=submit]");
  // The sentences come from the page, in its language (data-* attributes of the box).
  function said(name) { return box.getAttribute("data-" + name); }
  function fill(message, values) {
    return message.replace(/\{(\w+)\}/g, function (whole, key) {
      return values.hasOwnProperty(key) ? values[key] : whole;
    });
  }

  function megabytes(bytes) { return (bytes / (1024 * 1024)).toFixed(1); }

  function show(share, message) {
    bar.value = share;
    bar.textContent = Math.floor(share * 100) + "%";
    text.textContent = message;
  }

  function stopped(message) {
    text.textContent = message;
    text.classList.add("bad");
    button.disabled = false;
  }

  function replacePage(xhr) {
    // The request followed the redirect by itself; its final address is the page to show.
    var address = xhr.responseURL || form.action;
    if (address !== window.location.href) { window.history.pushState(null, "", address); }
    document.open();
    document.write(xhr.responseText);
    document.close();
    // Opening the document removed every listener; Back returns to the form by loading it again.
    window.addEventListener("popstate", function () { window.location.reload(); });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var xhr = new XMLHttpRequest();
    xhr.open(form.method || "post", form.action);
    xhr.upload.addEventListener("progress", function (progress) {
      if (progress.lengthComputable && progress.total > 0) {
        show(progress.loaded / progress.total, fill(said("sent-part"), {
          sent: megabytes(progress.loaded),
          total: megabytes(progress.total),
          percent: Math.floor(100 * progress.loaded / progress.total)
        }));
      }
    });
    xhr.upload.addEventListener("load", function () {
      show(1, said("sent"));
    });
    xhr.addEventListener("load", function () {
      var type = xhr.getResponseHeader("Content-Type") || "";
      if (type.indexOf("text/html") === 0) {
        replacePage(xhr);
      } else {
        stopped(fill(said("refused"), { status: xhr.status }));
      }
    });
    xhr.addEventListener("error", function () {
      stopped(said("lost"));
    });
    xhr.addEventListener("abort", function () {
      stopped(said("stopped"));
    });
    text.classList.remove("bad");
    button.disabled = true;
    box.hidden = false;
    show(0, said("starting"));
    xhr.send(new FormData(form));
  });
}());
