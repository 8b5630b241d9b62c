//! placeholder

pub mod demo;
