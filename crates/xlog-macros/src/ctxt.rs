//! Collects every diagnostic so a user sees all bad attributes at once.

use std::cell::RefCell;

use quote::ToTokens;

#[derive(Default)]
pub struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    pub fn error_spanned_by(&self, tokens: impl ToTokens, msg: impl std::fmt::Display) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new_spanned(tokens.into_token_stream(), msg));
    }

    pub fn syn_error(&self, e: syn::Error) {
        self.errors.borrow_mut().push(e);
    }

    /// All collected errors as one combined error, if any.
    pub fn check(self) -> Result<(), syn::Error> {
        let mut errors = self.errors.into_inner().into_iter();
        let Some(mut first) = errors.next() else {
            return Ok(());
        };
        for e in errors {
            first.combine(e);
        }
        Err(first)
    }
}
