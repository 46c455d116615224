// The console's entry: signs in, then routes by the URL's hash (#/, #/sequences/NAME,
// #/lookup, #/tokens), so the page itself is one relative URL under any path prefix.

import { ApiError, get, token } from "./api.js";
import { clear, el, errorBox, say } from "./dom.js";
import { signIn } from "./signin.js";
import { overview } from "./overview.js";
import { sequencePage } from "./sequence.js";
import { tokensPage } from "./tokens.js";
import { lookupPage } from "./lookup.js";
import { allows } from "./scopes.js";

const main = document.getElementById("main");
let who = null;

const ROUTES = [
  [/^#\/sequences\/([^/?]+)$/, "overview", (ctx, [name]) => sequencePage(main, ctx, decodeURIComponent(name))],
  [/^#\/lookup(?:\/([^/?]*))?$/, "lookup", (ctx, [number]) => lookupPage(main, ctx, number ? decodeURIComponent(number) : "")],
  [/^#\/tokens$/, "tokens", (ctx) => tokensPage(main, ctx)],
  [/^(?:#\/?)?(?:\?(.*))?$/, "overview", (ctx, [query]) => overview(main, ctx, new URLSearchParams(query ?? ""))],
];

function showSignedIn(signedIn) {
  document.getElementById("nav").hidden = !signedIn;
  document.getElementById("who").hidden = !signedIn;
  document.getElementById("who-name").textContent = signedIn ? `Signed in as ${who.name}` : "";
  document.getElementById("nav-tokens").hidden = !(signedIn && allows(who.scopes, "admin", "*"));
}

function markCurrent(section) {
  for (const link of document.querySelectorAll("[data-nav]")) {
    if (link.dataset.nav === section) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function render() {
  say("");
  if (!token.get()) {
    who = null;
    showSignedIn(false);
    return signIn(clear(main), render);
  }
  try {
    who ??= await get("whoami");
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      token.clear();
      return render();
    }
    clear(main).append(errorBox(error));
    return;
  }
  showSignedIn(true);
  const route = ROUTES.find(([pattern]) => pattern.test(location.hash));
  if (!route) {
    clear(main).append(el("h1", { tabindex: "-1" }, "No such page"), el("p", {}, el("a", { href: "#/" }, "Back to the sequences")));
    return;
  }
  const [pattern, section, view] = route;
  markCurrent(section);
  const ctx = { who, rerender: render };
  await view(ctx, location.hash.match(pattern).slice(1));
}

document.getElementById("sign-out").addEventListener("click", () => {
  token.clear();
  who = null;
  location.hash = "#/";
  render();
  say("Signed out.");
});
window.addEventListener("hashchange", () => render().then(() => main.querySelector("h1")?.focus()));
render();
