// What the signed-in token may do, to hide what it may not. The server decides every request
// on its own (a hidden button is a courtesy, not a guard); these rules mirror src/auth/scope.rs.

const VERBS = ["read", "vend", "lease", "admin"];

function parse(raw) {
  const at = raw.indexOf(":");
  return { verb: VERBS.indexOf(raw.slice(0, at)), target: raw.slice(at + 1) };
}

function covers(target, name, namespace) {
  if (target === "*") return true;
  const [text, against] = target.startsWith("namespace:")
    ? [target.slice("namespace:".length), namespace]
    : [target, name];
  if (against === undefined || against === null) return false;
  return text.endsWith("*") ? against.startsWith(text.slice(0, -1)) : against === text;
}

export function allows(scopes, verb, sequence) {
  const needed = VERBS.indexOf(verb);
  return scopes.map(parse).some(
    (scope) =>
      scope.verb >= needed &&
      (sequence === "*" ? scope.target === "*" : covers(scope.target, sequence.name, sequence.namespace)),
  );
}

// Adding a range claims number space: admin over the sequence and over its namespace.
export function mayAdmin(scopes, sequence) {
  return (
    allows(scopes, "admin", sequence) &&
    allows(scopes, "admin", { name: sequence.namespace, namespace: sequence.namespace })
  );
}
