//! `leash fmt` (the formatter, SPEC 13) on any text: a program that loads is formatted
//! without changing what it is (the formatter's own check: the formatted text parses to
//! the same program), and formatting is idempotent (formatting the result changes
//! nothing). Text that does not parse is refused, never changed.
#![no_main]
use leash::tools::fmt::{format_source, FmtError};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    leash_fuzz::on_interp_thread({
        let src = src.to_string();
        move || match format_source("fuzz.lsh", &src) {
            Ok(once) => match format_source("fuzz.lsh", &once) {
                Ok(twice) => assert_eq!(once, twice, "formatting is not idempotent"),
                Err(FmtError::Changed) => panic!("formatting its own output changes the program"),
                Err(FmtError::Load(ds)) => panic!("the formatted text does not parse: {ds:?}"),
            },
            Err(FmtError::Changed) => panic!("formatting would change the program"),
            Err(FmtError::Load(_)) => {}
        }
    });
});
