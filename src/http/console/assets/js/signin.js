// Sign in: the token is pasted once and kept in this tab's session storage only.

import { ApiError, get, token } from "./api.js";
import { el, errorBox, field, say } from "./dom.js";

export function signIn(main, signedIn) {
  const secret = field("API token", {
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    name: "token",
  }, "Kept in this browser tab only, and forgotten when you sign out or close the tab.");
  const problem = el("div");
  const form = el(
    "form",
    { class: "card narrow", "aria-labelledby": "signin-title" },
    el("h1", { id: "signin-title", tabindex: "-1" }, "Sign in"),
    el("p", {}, "Paste a seqvend token. What you can see and do follows its scopes."),
    secret.node,
    problem,
    el("button", { type: "submit" }, "Sign in"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problem.replaceChildren();
    token.set(secret.input.value.trim());
    try {
      await get("whoami");
    } catch (error) {
      token.clear();
      const shown = error instanceof ApiError && error.status === 401
        ? new ApiError(401, "unauthorized", "seqvend does not know this token (mistyped, or revoked).")
        : error;
      problem.append(errorBox(shown));
      secret.input.focus();
      return;
    }
    secret.input.value = "";
    say("Signed in.");
    await signedIn();
  });
  main.append(form);
  secret.input.focus();
}
