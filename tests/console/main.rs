//! The operator console: served with its security headers and turned off by its setting
//! (over HTTP), and driven in headless Chromium through WebDriver against a real seqvend and
//! PostgreSQL — signing in, the overview, a sequence's page, its actions, tokens, number
//! look-ups, hostile text, screenshots and an accessibility check (axe-core).

#[path = "../common/mod.rs"]
mod common;

mod browser;
mod freshness;
mod history;
mod hostile;
mod operator;
mod overview;
mod serving;
mod setup;
