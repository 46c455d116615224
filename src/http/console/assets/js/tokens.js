// Tokens, for an admin of everything: create a scoped token (its secret shown this once, with
// a copy button, and never again), list them, revoke one.

import { api, get } from "./api.js";
import { clear, el, errorBox, field, heading, say } from "./dom.js";
import { when } from "./format.js";

function secretBox(created) {
  const secret = el("input", { id: "new-secret", readonly: true, value: created.token, "aria-describedby": "secret-hint", class: "secret" });
  const copy = el("button", { type: "button", onclick: async () => {
    secret.select();
    try {
      await navigator.clipboard.writeText(created.token);
      say("Token copied.");
    } catch {
      say("Copy blocked by the browser: the token is selected, press Ctrl+C.");
    }
  } }, "Copy");
  return el("div", { class: "card notice", role: "alert" },
    el("p", {}, el("strong", {}, `Token ${created.name} created.`)),
    el("label", { for: "new-secret" }, "Its secret"),
    el("div", { class: "inline" }, secret, copy),
    el("p", { id: "secret-hint" }, "Shown this once: seqvend keeps only its hash. Copy it now."));
}

function createForm(afterCreate) {
  const name = field("Name", { name: "token_name", required: true, autocomplete: "off", spellcheck: "false" }, "Shown in logs and the audit trail; never reused.");
  const scopes = field("Scopes, one per line", { name: "scopes", rows: 3, required: true, spellcheck: "false" }, "e.g. vend:fedex-*  ·  read:namespace:ups_1z.5R8939.*  ·  admin:acme-1");
  const problem = el("div");
  const form = el("form", { class: "card", "aria-labelledby": "create-title" }, heading("Create a token", 2, "create-title"), name.node, scopes.node, problem, el("button", { type: "submit" }, "Create token"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problem.replaceChildren();
    const list = scopes.input.value.split(/[\s,]+/).filter(Boolean);
    try {
      const created = await api("POST", "tokens", { name: name.input.value.trim(), scopes: list });
      name.input.value = "";
      scopes.input.value = "";
      await afterCreate(created);
    } catch (error) {
      problem.append(errorBox(error));
    }
  });
  return form;
}

function revokeButton(token, refresh) {
  let armed = false;
  const button = el("button", { type: "button", class: "secondary", "aria-label": `Revoke ${token.name}` }, "Revoke");
  button.addEventListener("click", async () => {
    if (!armed) {
      armed = true;
      button.textContent = "Confirm revoke";
      button.classList.add("danger");
      return;
    }
    button.disabled = true;
    try {
      await api("DELETE", `tokens/${token.id}`);
      say(`Token ${token.name} revoked.`);
      await refresh();
    } catch (error) {
      button.replaceWith(errorBox(error));
    }
  });
  return button;
}

function tokenTable(tokens, refresh) {
  return el("table", { class: "tokens" },
    el("caption", { class: "visually-hidden" }, "Tokens"),
    el("thead", {}, el("tr", {}, ["Id", "Name", "Scopes", "Created", "Last used", "State"].map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, tokens.map((t) => el("tr", {},
      el("td", { "data-label": "Id" }, String(t.id)),
      el("th", { scope: "row", "data-label": "Name" }, t.name),
      el("td", { "data-label": "Scopes" }, t.scopes.map((s) => el("code", { class: "scope" }, s))),
      el("td", { "data-label": "Created" }, when(t.created_at), ` by ${t.created_by}`),
      el("td", { "data-label": "Last used" }, when(t.last_used_at)),
      el("td", { "data-label": "State" }, t.revoked_at ? el("span", { class: "badge status-retired" }, "revoked") : revokeButton(t, refresh))))));
}

export async function tokensPage(main) {
  const created = el("div");
  const list = el("div", { "aria-busy": "true" }, el("p", { class: "loading" }, "Loading tokens…"));
  const refresh = async () => {
    try {
      const { tokens } = await get("tokens");
      list.replaceChildren(tokens.length ? tokenTable(tokens, refresh) : el("p", {}, "No tokens made at run time yet."));
    } catch (error) {
      list.replaceChildren(errorBox(error));
    }
    list.setAttribute("aria-busy", "false");
  };
  const form = createForm(async (token) => {
    created.replaceChildren(secretBox(token));
    await refresh();
  });
  clear(main).append(el("h1", { tabindex: "-1" }, "Tokens"), created, form, heading("All tokens", 2), list);
  await refresh();
  performance.mark("tokens-interactive");
}
