//! Headless Chromium driven through chromedriver (started on a free port, stopped on drop),
//! with what the console tests ask of it: sign in, wait for text, screenshots at laptop and
//! phone sizes, and axe-core's accessibility check run in the page.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
use tokio::sync::{Mutex, MutexGuard};

use crate::common::process::free_port;
use crate::common::wait::{eventually, eventually_some};

/// How long a page may take to show what a test waits for.
const PATIENCE: Duration = Duration::from_secs(15);

pub const LAPTOP: (u32, u32) = (1366, 768);
pub const PHONE: (u32, u32) = (390, 844);

/// Browser tests take turns: a few Chromiums at once would only slow each other down on a
/// small machine, and a slow page is a flaky wait.
static TURN: Mutex<()> = Mutex::const_new(());

pub struct Browser {
    pub client: Client,
    driver: Child,
    _turn: MutexGuard<'static, ()>,
    /// The console's URL, e.g. `http://127.0.0.1:1234/console/`.
    pub console: String,
}

impl Browser {
    /// A new headless Chromium at laptop size, pointed at nothing yet.
    pub async fn start(seqvend: &str) -> Self {
        let turn = TURN.lock().await;
        let port = free_port();
        // A process group of its own, so that Chromium goes with it on drop (see below).
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver runs (scripts/common.sh: ensure_console_test_tools)");
        let webdriver = format!("http://127.0.0.1:{port}");
        let status = format!("{webdriver}/status");
        eventually(PATIENCE, "chromedriver answers", || {
            let request = reqwest::get(status.clone());
            async move { request.await.is_ok_and(|r| r.status().is_success()) }
        })
        .await;
        let client = ClientBuilder::native()
            .capabilities(capabilities())
            .connect(&webdriver)
            .await
            .expect("a Chromium session");
        let browser = Self {
            client,
            driver,
            _turn: turn,
            console: format!("{seqvend}/console/"),
        };
        browser.resize(LAPTOP).await;
        browser
    }

    /// The viewport (not the window) set to `width × height` CSS pixels.
    pub async fn resize(&self, (width, height): (u32, u32)) {
        self.client
            .set_window_size(width, height)
            .await
            .expect("window resized");
        let inner: Value = self
            .client
            .execute("return [window.innerWidth, window.innerHeight]", vec![])
            .await
            .unwrap();
        let (w, h) = (inner[0].as_u64().unwrap(), inner[1].as_u64().unwrap());
        // The window's frame takes its share: grow the window by it, once.
        self.client
            .set_window_size(2 * width - w as u32, 2 * height - h as u32)
            .await
            .expect("window resized");
    }

    pub async fn open(&self, hash: &str) {
        self.client
            .goto(&format!("{}{hash}", self.console))
            .await
            .expect("page opened");
    }

    /// Signs in with `token` from the sign-in form and waits for the overview.
    pub async fn sign_in(&self, token: &str) {
        self.open("#/").await;
        self.fill("input[name=token]", token).await;
        self.click("form button[type=submit]").await;
        self.text_of("#who-name", "Signed in as").await;
    }

    /// The first element `css` finds, waiting for it to appear.
    pub async fn find(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|err| panic!("no {css} on the page: {err}"))
    }

    /// Every element `css` finds now.
    pub async fn all(&self, css: &str) -> Vec<Element> {
        self.client.find_all(Locator::Css(css)).await.unwrap()
    }

    /// Waits until an element `css` finds shows text containing `expected`; returns its text.
    pub async fn text_of(&self, css: &str, expected: &str) -> String {
        let what = format!("{css} shows {expected:?}");
        eventually_some(PATIENCE, &what, || async {
            for element in self.client.find_all(Locator::Css(css)).await.ok()? {
                let text = element.text().await.ok()?;
                if text.contains(expected) {
                    return Some(text);
                }
            }
            None
        })
        .await
    }

    /// Clicks the first element `css` finds.
    pub async fn click(&self, css: &str) {
        self.find(css).await.click().await.unwrap();
    }

    /// Types `text` into the field `css` finds, after clearing it.
    pub async fn fill(&self, css: &str, text: &str) {
        let field = self.find(css).await;
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
    }

    pub async fn script(&self, script: &str) -> Value {
        self.client.execute(script, vec![]).await.unwrap()
    }

    /// Writes a screenshot of the page at laptop and at phone size to the screenshot
    /// directory, as `<name>-laptop.png` and `<name>-phone.png`; leaves it at laptop size.
    pub async fn screenshots(&self, name: &str) {
        for (size, label) in [(PHONE, "phone"), (LAPTOP, "laptop")] {
            self.resize(size).await;
            let png = self.client.screenshot().await.expect("a screenshot");
            let path = screenshot_dir().join(format!("{name}-{label}.png"));
            std::fs::write(&path, png).expect("screenshot written");
        }
    }

    /// Runs axe-core in the page; returns the serious and critical violations, one line each.
    pub async fn accessibility_violations(&self) -> Vec<String> {
        let axe = std::fs::read_to_string(axe_path())
            .expect("axe-core installed (scripts/common.sh: ensure_console_test_tools)");
        // WebDriver scripts run outside the page's Content-Security-Policy.
        self.client
            .execute(&format!("{axe}\n;return true;"), vec![])
            .await
            .expect("axe-core injected");
        let found = self
            .client
            .execute_async(
                "const done = arguments[arguments.length - 1];
                 axe.run(document, { resultTypes: ['violations'] }).then((r) => done(
                   r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
                     .map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)));",
                vec![],
            )
            .await
            .expect("axe-core ran");
        serde_json::from_value(found).unwrap()
    }
}

impl Drop for Browser {
    /// Chromium outlives a killed chromedriver: the whole process group goes, even when the
    /// test failed half-way.
    fn drop(&mut self) {
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.driver.wait();
    }
}

/// Headless Chromium; `--no-sandbox` because tests run as root in CI.
fn capabilities() -> serde_json::Map<String, Value> {
    let capabilities = json!({
        "browserName": "chrome",
        "goog:chromeOptions": {
            "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--hide-scrollbars", "--lang=en-US"],
        },
    });
    capabilities.as_object().unwrap().clone()
}

/// Where screenshots go: `target/tmp/console-screenshots` (a few are copied to docs/console/).
pub fn screenshot_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn axe_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/axe/node_modules/axe-core/axe.min.js")
}
