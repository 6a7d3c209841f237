// Dataset page, the column form. Without this script the form works as plain HTML: every box a
// text field, categories comma-separated, the server validating everything.
(function () {
  "use strict";
  var form = document.getElementById("schema-form");
  if (!form) { return; }
  // The tag editor's words come from the page, in its language (data-* attributes of the form).
  function phrase(name, values) {
    return (form.getAttribute("data-" + name) || "").replace(/\{(\w+)\}/g, function (whole, key) {
      return Object.prototype.hasOwnProperty.call(values, key) ? values[key] : whole;
    });
  }

  // Each column shows only the fields of its chosen kind, switching as the kind changes. Values
  // in the hidden fields stay, so switching back loses nothing (the server ignores them).
  Array.prototype.forEach.call(form.querySelectorAll("tr.schema-column"), function (row) {
    var select = row.querySelector("select[name$='-kind']");
    if (!select) { return; }
    function show() {
      var kind = select.value;
      Array.prototype.forEach.call(row.querySelectorAll(".kind-fields"), function (group) {
        group.hidden = group.getAttribute("data-kinds").split(" ").indexOf(kind) < 0;
      });
      // The fill box serves both kinds: its example follows the kind.
      var fill = row.querySelector("input[name$='-fill']");
      if (fill) { fill.placeholder = fill.getAttribute("data-placeholder-" + kind) || ""; }
    }
    select.addEventListener("change", show);
    show();
  });

  function split(text) {
    return text.split(",").map(function (part) { return part.trim(); })
      .filter(function (part) { return part !== ""; });
  }

  // Categories as a list of tags over the form's own comma-separated field, which stays the
  // value posted. Enter or a comma adds the typed text, Backspace in an empty box removes the last
  // tag, and each tag has a remove button; a live region says what changed.
  function tagEditor(field) {
    var column = field.getAttribute("data-column") || "";
    var tags = split(field.value);
    var editor = document.createElement("div");
    editor.className = "tag-editor";
    var list = document.createElement("ul");
    list.className = "tags";
    var entry = document.createElement("input");
    entry.type = "text";
    entry.id = field.id + "-entry";
    entry.className = "tag-entry";
    entry.placeholder = field.placeholder;
    entry.autocomplete = "off";
    var described = field.getAttribute("aria-describedby");
    if (described) { entry.setAttribute("aria-describedby", described); }
    if (field.getAttribute("aria-invalid")) { entry.setAttribute("aria-invalid", "true"); }
    var status = document.createElement("span");
    status.className = "visually-hidden";
    status.setAttribute("role", "status");
    editor.appendChild(list);
    editor.appendChild(entry);
    editor.appendChild(status);
    field.parentNode.insertBefore(editor, field.nextSibling);
    var label = form.querySelector("label[for='" + field.id + "']");
    if (label) { label.htmlFor = entry.id; }
    field.type = "hidden";

    function render() {
      list.textContent = "";
      tags.forEach(function (tag, index) {
        var item = document.createElement("li");
        var text = document.createElement("span");
        text.textContent = tag;
        var remove = document.createElement("button");
        remove.type = "button";
        remove.textContent = "×";
        remove.setAttribute("aria-label", phrase("remove-label", { tag: tag, column: column }));
        remove.addEventListener("click", function () {
          removeAt(index);
          entry.focus();
        });
        item.appendChild(text);
        item.appendChild(remove);
        list.appendChild(item);
      });
      list.hidden = tags.length === 0;
      field.value = tags.join(", ");
    }
    function add(text) {
      var said = [];
      split(text).forEach(function (tag) {
        if (tags.indexOf(tag) >= 0) {
          said.push(phrase("already", { tag: tag }));
        } else {
          tags.push(tag);
          said.push(phrase("added", { tag: tag }));
        }
      });
      if (said.length) { status.textContent = said.join(". "); }
      render();
    }
    function removeAt(index) {
      var removed = tags.splice(index, 1)[0];
      status.textContent = phrase("removed", { tag: removed });
      render();
    }
    function commit() {
      if (entry.value.trim() !== "") { add(entry.value); }
      entry.value = "";
    }
    entry.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === ",") {
        // Enter adds a tag rather than submitting the form.
        event.preventDefault();
        commit();
      } else if (event.key === "Backspace" && entry.value === "" && tags.length) {
        event.preventDefault();
        removeAt(tags.length - 1);
      }
    });
    // Pasted or filled text with commas: each complete part becomes a tag.
    entry.addEventListener("input", function () {
      var last = entry.value.lastIndexOf(",");
      if (last < 0) { return; }
      add(entry.value.slice(0, last));
      entry.value = entry.value.slice(last + 1).replace(/^\s+/, "");
    });
    // Text typed but not yet added is kept, never lost.
    entry.addEventListener("blur", commit);
    form.addEventListener("submit", commit);
    render();
  }

  Array.prototype.forEach.call(form.querySelectorAll("input.category-list"), tagEditor);
}());
