// Calls to seqvend's JSON API. The token lives in this tab's session storage only and goes
// out as the bearer header, never in a URL or a cookie. Paths are relative to the console
// ("../sequences"), so a reverse proxy's path prefix is kept.

const KEY = "seqvend.token";

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (value) => sessionStorage.setItem(KEY, value),
  clear: () => sessionStorage.removeItem(KEY),
};

// A refusal as the API words it: status, stable code, a message a person can act on.
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export const enc = encodeURIComponent;

export async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const secret = token.get();
  if (secret) headers.Authorization = `Bearer ${secret}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(`../${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
    });
  } catch (error) {
    throw new ApiError(0, "network", `seqvend did not answer (${error.message}).`);
  }
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    throw new ApiError(
      response.status,
      data?.error ?? `http_${response.status}`,
      data?.message ?? response.statusText,
    );
  }
  return data;
}

export const get = (path) => api("GET", path);
