// The migrations are embedded by `sqlx::migrate!`, which does not by itself notice a changed
// or new migration file: rebuild when the directory changes.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
