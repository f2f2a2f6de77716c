// A modal confirmation (<dialog>, so focus is trapped and Esc cancels) that says what an action
// breaks, optionally asking for a reason (``reasonValue``: what it starts with). Resolves to the
// reason ("" when none is asked) or null.
import { h } from "./dom.js";

export function confirmDialog({ title, body = [], confirm = "Confirm", danger = false, reason = null, reasonValue = "" }) {
  return new Promise((resolve) => {
    const heading = h("h2", { id: "dlg-h" }, title);
    const reasonInput = reason ? h("input", { type: "text", name: "reason", id: "dlg-reason", required: true, value: reasonValue }) : null;
    const form = h("form", { method: "dialog" },
      heading, body,
      reasonInput ? h("div", { class: "field" }, h("label", { for: "dlg-reason" }, reason), reasonInput) : null,
      h("div", { class: "actions" },
        h("button", { type: "submit", value: "ok", class: danger ? "danger" : "primary" }, confirm),
        h("button", { type: "button", value: "cancel", onclick: () => dlg.close("cancel") }, "Cancel")));
    const dlg = h("dialog", { "aria-labelledby": "dlg-h", class: "confirm" }, form);
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (reasonInput && !reasonInput.value.trim()) { reasonInput.reportValidity(); return; }
      dlg.close("ok");
    });
    dlg.addEventListener("close", () => {
      const ok = dlg.returnValue === "ok";
      dlg.remove();
      resolve(ok ? (reasonInput ? reasonInput.value.trim() : "") : null);
    });
    document.body.append(dlg);
    dlg.showModal();
  });
}
