//! placeholder

pub mod demo;
pub mod harness;
